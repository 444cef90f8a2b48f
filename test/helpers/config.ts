/** Config-loading helpers for the config tests. */
import { ConfigError, parseConfig } from '../../src/config/load.js'

/** The smallest servable config: one upstream, one route. */
export const MINIMAL_CONFIG = `
upstreams: { core: { url: "http://127.0.0.1:3000" } }
routes: [{ prefix: /api/v1, upstream: core }]
`

/** Every problem parseConfig reports for `text`, or [] when it is valid. */
export function configProblems (text: string, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(text, env)
  } catch (err) {
    if (err instanceof ConfigError) return err.problems
    throw err
  }
  return []
}
