/**
 * Shadow rules (docs/safe-change.md), over raw sockets against real Redis and a real
 * upstream: `shadow_rules` are decided beside the live rules on every request with a
 * key, never changing the answer:
 *
 * - a shadow rule that would deny a request the live rules allow: still 200, the
 *   upstream gets it, the log line has `shadow` and the metric counts it;
 * - one that would allow what the live rules deny: still 403, noted the same way;
 * - where both agree, nothing is noted; without shadow rules, nothing at all;
 * - `keygate check --shadow` prints both decisions.
 */
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'
import { cliEnv, runCli } from '../../helpers/cli.js'

const SHADOW = `
shadow_rules:
  - { method: GET,  path: /api/v1/users,        permissions: [users:admin] }
  - { method: POST, path: /api/v1/users,        permissions: [users:read] }
  - { method: GET,  path: /api/v1/open/*,       permissions: [] }
`

async function metricsText (gw: Awaited<ReturnType<typeof startGateway>>): Promise<string> {
  return (await gw.admin('GET', '/metrics')).body
}

t.test('a difference never changes the answer, and is logged and counted', async (t) => {
  const gw = await startGateway(t, { yaml: SHADOW })
  const reader = await gw.fixtures.personalKey('alice')

  const allowed = await gw.get('/api/v1/users', reader.key)
  t.equal(allowed.status, 200, 'the live rules allow: 200, though the shadow rule would deny')
  t.equal(gw.upstream.requests.length, 1, 'the upstream got it')
  t.match(await gw.logOf(allowed), { status: 200, reason: 'allowed', shadow: { rule: '0', live: 'allow', shadow: 'missing_permission' } })

  const refused = await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${reader.key}` }, '{}')
  t.equal(refused.status, 403, 'the live rules refuse: 403, though the shadow rule would allow')
  t.equal(gw.upstream.requests.length, 1, 'the upstream got nothing more')
  t.match(await gw.logOf(refused), { status: 403, reason: 'missing_permission', shadow: { rule: '1', live: 'missing_permission', shadow: 'allow' } })

  const same = await gw.get('/api/v1/open/x', reader.key)
  t.equal(same.status, 200)
  const sameLine = await gw.logOf(same)
  t.equal(sameLine?.reason, 'allowed')
  t.notOk(sameLine !== undefined && 'shadow' in sameLine, 'both agree: no shadow field')

  const none = await gw.get('/api/v1/orgs/acme/x', reader.key)
  t.equal(none.status, 403)
  t.match(await gw.logOf(none), { reason: 'missing_permission', shadow: { rule: 'none', live: 'missing_permission', shadow: 'no_rule' } },
    'no shadow rule matches: the shadow answer is no_rule')

  const text = await metricsText(gw)
  t.match(text, /keygate_shadow_decisions_total\{rule="0",live="allow",shadow="missing_permission"\} 1/)
  t.match(text, /keygate_shadow_decisions_total\{rule="1",live="missing_permission",shadow="allow"\} 1/)
  t.notOk(gw.rawLogs.some((l) => l.includes(reader.key.slice(20))), 'no log line holds the key')
})

t.test('without shadow rules: no shadow field, no series', async (t) => {
  const gw = await startGateway(t)
  const reader = await gw.fixtures.personalKey('alice')
  const res = await gw.get('/api/v1/users', reader.key)
  t.equal(res.status, 200)
  t.notOk('shadow' in ((await gw.logOf(res)) ?? {}))
  t.notMatch(await metricsText(gw), /keygate_shadow_decisions_total\{/)
})

t.test('keygate check --shadow prints both decisions', async (t) => {
  const gw = await startGateway(t, { yaml: SHADOW })
  const reader = await gw.fixtures.personalKey('alice')
  const env = { ...cliEnv(gw), KEYGATE_KEY: reader.key }

  const human = await runCli(['check', '--shadow', 'GET', '/api/v1/users'], env)
  t.equal(human.code, 0, 'the live answer decides the exit status: allowed')
  t.match(human.stdout, /ALLOW -> forwarded upstream/)
  t.match(human.stdout, /shadow {4}live allow, shadow missing_permission \(shadow rule #0\)/)

  const json = await runCli(['check', '--shadow', '--json', 'POST', '/api/v1/users'], env)
  t.equal(json.code, 3)
  t.match(JSON.parse(json.stdout), { reason: 'missing_permission', shadow: { agrees: false, rule: '1', live: 'missing_permission', shadow: 'allow' } })

  const agrees = await runCli(['check', '--shadow', '--json', 'GET', '/api/v1/open/x'], env)
  t.match(JSON.parse(agrees.stdout), { reason: 'allowed', shadow: { agrees: true } })
  const plain = await runCli(['check', '--json', 'GET', '/api/v1/users'], env)
  t.notOk('shadow' in (JSON.parse(plain.stdout) as object), 'without --shadow, nothing of them')
})
