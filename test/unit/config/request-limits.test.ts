import t from 'tap'
import { fileURLToPath } from 'node:url'
import { loadConfig, parseConfig } from '../../../src/config/load.js'
import { configProblems, MINIMAL_CONFIG } from '../../helpers/config.js'

t.test('request limits and dropped headers: defaults, in code and in the shipped file', async (t) => {
  for (const c of [parseConfig(MINIMAL_CONFIG), loadConfig(fileURLToPath(new URL('../../../config/keygate.yaml', import.meta.url)), {})]) {
    t.equal(c.limits.header_count, 100)
    t.equal(c.limits.header_timeout_ms, 10000)
    t.equal(c.limits.body_idle_timeout_ms, 30000)
    t.same(c.identity.drop_headers, [])
  }
})

t.test('out-of-range limits and header names that are not tokens are reported, naming the field', async (t) => {
  const found = configProblems(MINIMAL_CONFIG + `
limits: { header_count: 0, header_timeout_ms: 5, body_idle_timeout_ms: -1 }
identity: { drop_headers: ["X-Fine", "not a header", ""] }
`).join('\n')
  t.match(found, /limits\.header_count/)
  t.match(found, /limits\.header_timeout_ms/)
  t.match(found, /limits\.body_idle_timeout_ms/)
  t.match(found, /identity\.drop_headers\[1\]/)
  t.match(found, /identity\.drop_headers\[2\]/)
  t.notMatch(found, /identity\.drop_headers\[0\]/)
  t.same(configProblems(MINIMAL_CONFIG + 'limits: { header_count: 10000 }\nidentity: { drop_headers: [X_Debug] }\n'), [], 'the largest header_count and an underscore name are fine')
})
