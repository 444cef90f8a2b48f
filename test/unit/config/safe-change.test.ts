// The safe-change settings (docs/safe-change.md, docs/test-keys.md): their defaults, and
// every problem named by its field.
import t from 'tap'
import { parseConfig } from '../../../src/config/load.js'
import { configProblems, MINIMAL_CONFIG } from '../../helpers/config.js'

t.test('defaults: kgt_ test keys, no shadow rules, public leak reports on', async (t) => {
  const c = parseConfig(MINIMAL_CONFIG)
  t.equal(c.keys.test_prefix, 'kgt_')
  t.same(c.shadow_rules, [])
  t.same(c.leaks.public, { enabled: true, per_address: '10/1m', max_pending: 10000 })
  t.equal(c.routes[0]?.test_upstream, undefined)
})

t.test('each problem names its field', async (t) => {
  const cases: Array<[string, string, RegExp]> = [
    ['a test prefix equal to the live one', 'keys: { prefix: kg_, test_prefix: kg_ }', /^keys\.test_prefix: kg_ is keys\.prefix too/],
    ['a test prefix of the wrong shape', 'keys: { test_prefix: "test-" }', /^keys\.test_prefix/],
    ['a shadow rule under no route', 'shadow_rules: [{ method: GET, path: /other, permissions: [] }]', /^shadow_rules\[0\]\.path: \/other is under no route prefix/],
    ['a shadow rule with a bad org_param', 'shadow_rules: [{ method: GET, path: /api/v1/x, permissions: [], org_param: org }]', /^shadow_rules\[0\]\.org_param/],
    ['a bad per-address limit', 'leaks: { public: { per_address: lots } }', /^leaks\.public\.per_address/]
  ]
  for (const [what, yaml, expected] of cases) {
    const problems = configProblems(`${MINIMAL_CONFIG}\n${yaml}\n`)
    t.ok(problems.some((p) => expected.test(p)), `${what}: ${JSON.stringify(problems)}`)
  }
  const upstreams = 'upstreams: { core: { url: "http://127.0.0.1:3000" }, sandbox: { url: "http://127.0.0.1:3001" } }\n'
  t.same(configProblems(`${upstreams}routes: [{ prefix: /api/v1, upstream: core, test_upstream: sandbox }]\n`), [],
    'a known test upstream is fine')
  t.match(configProblems(`${upstreams}routes: [{ prefix: /api/v1, upstream: core, test_upstream: nowhere }]\n`),
    [/^routes\[0\]\.test_upstream: no upstream named "nowhere"/], 'an unknown one is named')
})
