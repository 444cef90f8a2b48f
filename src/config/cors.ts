/** The checks of the `cors` section the schema cannot express (src/data-plane/cors.ts applies it). */
import type { Config } from './schema.js'

/** What is wrong with the `cors` section, if anything. */
export function corsProblems (c: Config['cors']): string[] {
  const problems: string[] = []
  c.allowed_origins.forEach((origin, i) => {
    if (origin !== '*' && !isOrigin(origin)) {
      problems.push(`cors.allowed_origins[${i}]: "${origin}" is not an origin (scheme://host[:port], no path), or "*"`)
    }
  })
  if (c.allow_credentials && c.allowed_origins.includes('*')) {
    problems.push(
      'cors.allow_credentials: not with "*" in cors.allowed_origins (browsers refuse credentials for any origin); ' +
      'list the origins'
    )
  }
  return problems
}

function isOrigin (text: string): boolean {
  try {
    const url = new URL(text)
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === text
  } catch {
    return false
  }
}
