// test/unit/ mirrors src/: each unit file is named after the source file it tests,
// at the same path. A few files test a topic across files instead; they are named here.
import t from 'tap'
import { existsSync, readdirSync } from 'node:fs'

const TOPICS = new Set([
  'config/redis-topology.test.ts', // the redis section of the configuration (load.ts, schema.ts)
  'config/request-limits.test.ts', // the limits section of the configuration (load.ts, schema.ts)
  'config/safe-change.test.ts', // test keys, shadow rules, public leak reports in the configuration (load.ts, schema.ts)
  'decision/reasons.test.ts', // every reason in REASONS (src/errors.ts), decided or given by a front end
  'errors-doc.test.ts', // the error catalogue against docs/errors.md
  'layout.test.ts', // this file: test/unit/ against src/
  'metrics/metrics-doc.test.ts' // the metrics against docs/metrics.md
])

t.test('every unit test file has its source file at the same path', async (t) => {
  const dir = new URL('./', import.meta.url)
  const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.test.ts')).sort()
  for (const f of files) {
    if (TOPICS.has(f)) continue
    const source = new URL(`../../src/${f.replace(/\.test\.ts$/, '.ts')}`, import.meta.url)
    t.ok(existsSync(source), `${f}: src/${f.replace(/\.test\.ts$/, '.ts')}`)
  }
  for (const f of TOPICS) t.ok(files.includes(f), `${f} is there`)
})
