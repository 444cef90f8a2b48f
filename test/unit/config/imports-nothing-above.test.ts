/**
 * The configuration stands below the parts it configures: a file of src/config/
 * imports packages, node's modules and its own siblings, never another part of src/.
 */
import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'

const DIR = new URL('../../../src/config/', import.meta.url)

for (const file of readdirSync(DIR).filter((f) => f.endsWith('.ts'))) {
  t.test(file, async (t) => {
    const text = readFileSync(new URL(file, DIR), 'utf8')
    const specifiers = [...text.matchAll(/^(?:import|export)\s[^'"]*?from\s+'([^']+)'/gm)].map((m) => m[1] as string)
    t.same(specifiers.filter((s) => s.startsWith('.') && !s.startsWith('./')), [], 'no import from outside src/config/')
  })
}
