/**
 * Shadow restrictions (docs/safe-change.md), over raw sockets against real Redis and a
 * real upstream: a scope or address list recorded on a key with `shadow: true` (the
 * admin API) or `keys restrict --shadow` (the CLI) is tried on every request of that key
 * and never enforced: the request is answered as before, what the shadow restriction
 * would refuse is counted per key with a few recent examples (method, path without its
 * query, reason, time), in `keygate_shadow_decisions_total{rule="key_restriction"}` and
 * the log line's `shadow`. Promoting it makes it refuse; dropping it leaves the live one.
 * Who may record, promote or drop one is who may restrict the key: an org admin its
 * org's keys (another org's: 404), a scope within its grants (403 otherwise).
 */
import t from 'tap'
import { adminCall as call, eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { cliEnv, runCli } from '../../helpers/cli.js'

const TOKEN = 'test-admin-token-0123456789abcdef'
// (four gateways and a few CLI processes: on a loaded machine this file runs past tap's default)
t.setTimeout(300_000)

interface Shown {
  allowed_cidrs?: string[]
  scope?: string[]
  shadow_since?: string
  shadow_scope?: string[]
  shadow_allowed_cidrs?: string[]
  shadow_refused?: number
  shadow_recent?: Array<{ method: string, path: string, reason: string, at: string }>
}

async function shown (gw: TestGateway, id: string): Promise<Shown> {
  return (await call(gw, 'GET', `/admin/v1/keys/${id}`, TOKEN)).json() as Shown
}

/** Requests until one's log line carries the shadow note (the gateway has the change); how many did. */
async function untilShadowed (gw: TestGateway, key: string, target: string): Promise<{ noted: number, waited: number }> {
  let noted = 0
  const waited = await eventually(async () => {
    const res = await gw.get(target, key)
    if (res.status !== 200) return false
    if ((await gw.logOf(res))?.shadow === undefined) return false
    noted++
    return true
  }, 3000)
  return { noted, waited }
}

t.test('a shadow restriction is counted, never refuses; promoted, it refuses', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const alice = await gw.fixtures.personalKey('alice')

  const recorded = await call(gw, 'POST', `/admin/v1/keys/${alice.id}/restrict`, TOKEN, { shadow: true, allowed_cidrs: ['10.0.0.0/8'] })
  t.equal(recorded.status, 200)
  t.same(recorded.json(), { id: alice.id, changed: true })
  const first = await untilShadowed(gw, alice.key, '/api/v1/users')
  t.ok(first.waited >= 0, 'the gateway tries the shadow restriction within 3 s')

  const upstreamBefore = gw.upstream.requests.length
  const res = await gw.get('/api/v1/users?token=s3cr3t-query', alice.key)
  t.equal(res.status, 200, 'from 127.0.0.1, outside the shadow addresses: still 200')
  t.equal(gw.upstream.requests.length, upstreamBefore + 1, 'the upstream got it')
  t.match(await gw.logOf(res), { status: 200, reason: 'allowed', shadow: { rule: 'key_restriction', live: 'allow', shadow: 'address_not_allowed' } })

  await gw.app.shadowRefusals.flush()
  const k = await shown(gw, alice.id)
  t.equal(k.allowed_cidrs, undefined, 'the live restriction is unchanged: none')
  t.same(k.shadow_allowed_cidrs, ['10.0.0.0/8'])
  t.type(k.shadow_since, 'string')
  t.equal(k.shadow_refused, first.noted + 1, 'every request it would refuse, counted once')
  t.match(k.shadow_recent?.[0], { method: 'GET', path: '/api/v1/users', reason: 'address_not_allowed' })
  t.ok(Number.isFinite(Date.parse(k.shadow_recent?.[0]?.at ?? '')), 'with its time')
  t.notMatch(JSON.stringify(k), /s3cr3t|token=/, 'never the query string')
  t.match((await gw.admin('GET', '/metrics')).body,
    /keygate_shadow_decisions_total\{rule="key_restriction",live="allow",shadow="address_not_allowed"\} \d+/)

  const promoted = await call(gw, 'POST', `/admin/v1/keys/${alice.id}/restrict/promote`, TOKEN, {})
  t.equal(promoted.status, 200)
  const refused = await eventually(async () => (await gw.get('/api/v1/users', alice.key)).status === 403, 3000)
  t.ok(refused >= 0, 'promoted: the key is refused from 127.0.0.1 within 3 s')
  const last = await gw.get('/api/v1/users', alice.key)
  t.match(await gw.logOf(last), { status: 403, reason: 'address_not_allowed' })
  const after = await shown(gw, alice.id)
  t.same(after.allowed_cidrs, ['10.0.0.0/8'], 'the shadow addresses are the live ones')
  t.equal(after.shadow_since, undefined, 'and the shadow restriction is gone')
  t.equal(await gw.client.exists(`${gw.prefix}shadow:{${alice.id}}`, `${gw.prefix}shadow:{${alice.id}}:recent`), 0, 'with its counts')
  const audit = (await call(gw, 'GET', '/admin/v1/audit?since=1h', TOKEN)).json() as { entries: Array<{ action: string, target: string, detail?: string }> }
  const mine = audit.entries.filter((e) => e.action === 'key.restrict' && e.target === `key:${alice.id}`)
  t.ok(mine.some((e) => /recorded/.test(e.detail ?? '')), 'recording audited')
  t.ok(mine.some((e) => /promoted/.test(e.detail ?? '') && /10\.0\.0\.0\/8/.test(e.detail ?? '')), 'promotion audited with the addresses')
  t.equal((await call(gw, 'POST', `/admin/v1/keys/${alice.id}/restrict/promote`, TOKEN, {})).status, 409, 'nothing left to promote: 409')
})

t.test('a shadow scope: counted as missing_permission; dropped, nothing is counted', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const bob = await gw.fixtures.personalKey('bob')
  t.equal((await call(gw, 'POST', `/admin/v1/keys/${bob.id}/restrict`, TOKEN, { shadow: true, scope: ['users:read'] })).status, 200)
  await untilShadowed(gw, bob.key, '/api/v1/users')
  const write = await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${bob.key}` }, '{}')
  t.equal(write.status, 200, 'writer: POST allowed live')
  t.match(await gw.logOf(write), { shadow: { rule: 'key_restriction', shadow: 'missing_permission' } })
  const read = await gw.get('/api/v1/users', bob.key)
  t.notOk('shadow' in ((await gw.logOf(read)) ?? {}), 'a GET the shadow scope allows: nothing noted')
  await gw.app.shadowRefusals.flush()
  t.match((await shown(gw, bob.id)).shadow_recent?.[0], { method: 'POST', path: '/api/v1/users', reason: 'missing_permission' })

  t.equal((await call(gw, 'DELETE', `/admin/v1/keys/${bob.id}/restrict/shadow`, TOKEN)).status, 200)
  const k = await shown(gw, bob.id)
  t.equal(k.shadow_since, undefined)
  t.equal(k.shadow_refused, undefined)
  t.equal(k.scope, undefined, 'the live restriction stays: none')
  const gone = await eventually(async () => {
    const res = await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${bob.key}` }, '{}')
    return res.status === 200 && (await gw.logOf(res))?.shadow === undefined
  }, 3000)
  t.ok(gone >= 0, 'dropped: no longer noted')
  t.equal((await call(gw, 'DELETE', `/admin/v1/keys/${bob.id}/restrict/shadow`, TOKEN)).status, 409, 'none to drop: 409')
})

t.test('org admins: their org\'s keys only, within their grants', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'users:*', 'orgs:read'])
  await f.user('oscar', 'acme', 'orgadmin')
  const oscar = (await f.personalKey('oscar')).key
  const alices = await f.personalKey('alice')
  const carols = await f.personalKey('carol')

  const own = await call(gw, 'POST', `/admin/v1/keys/${alices.id}/restrict`, oscar, { shadow: true, allowed_cidrs: ['10.0.0.0/8'] })
  t.equal(own.status, 200, 'its org\'s key: recorded')
  const other = await call(gw, 'POST', `/admin/v1/keys/${carols.id}/restrict`, oscar, { shadow: true, allowed_cidrs: ['10.0.0.0/8'] })
  t.equal(other.status, 404, 'another org\'s key: 404')
  const beyond = await call(gw, 'POST', `/admin/v1/keys/${alices.id}/restrict`, oscar, { shadow: true, scope: ['billing:read'] })
  t.equal(beyond.status, 403, 'a shadow scope beyond its own grants: 403, as a live one')
  t.equal((await call(gw, 'POST', `/admin/v1/keys/${carols.id}/restrict`, TOKEN, { shadow: true, scope: ['orgs:read'] })).status, 200)
  t.equal((await call(gw, 'POST', `/admin/v1/keys/${carols.id}/restrict/promote`, oscar, {})).status, 404, 'nor promotes another org\'s')
  t.equal((await call(gw, 'DELETE', `/admin/v1/keys/${carols.id}/restrict/shadow`, oscar)).status, 404, 'nor drops it')
  t.equal((await call(gw, 'POST', `/admin/v1/keys/${alices.id}/restrict/promote`, oscar, {})).status, 200, 'promotes its org\'s')
  t.same((await shown(gw, alices.id)).allowed_cidrs, ['10.0.0.0/8'])
  t.equal((await shown(gw, carols.id)).scope, undefined, 'the other org\'s key is unchanged')
})

t.test('the CLI: restrict --shadow, show, --promote', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const alice = await gw.fixtures.personalKey('alice')
  const env = cliEnv(gw)
  const rec = await runCli(['keys', 'restrict', alice.id, '--shadow', '--allow-cidr', '10.0.0.0/8'], env)
  t.equal(rec.code, 0, rec.stderr)
  t.match(rec.stdout, /addresses \(any\)/)
  t.match(rec.stdout, /shadow \(tried, not enforced\): scope \(all of its role\); addresses 10\.0\.0\.0\/8/)
  await untilShadowed(gw, alice.key, '/api/v1/users')
  await gw.app.shadowRefusals.flush()
  const show = await runCli(['keys', 'show', alice.id], env)
  t.equal(show.code, 0, show.stderr)
  t.match(show.stdout, /shadow_refused +[1-9]/)
  t.match(show.stdout, /would refuse \S+ GET \/api\/v1\/users address_not_allowed/)
  const both = await runCli(['keys', 'restrict', alice.id, '--promote', '--scope', 'users:read'], env)
  t.not(both.code, 0, '--promote takes no other option')
  const promote = await runCli(['keys', 'restrict', alice.id, '--promote', '--json'], env)
  t.equal(promote.code, 0, promote.stderr)
  const promoted = JSON.parse(promote.stdout) as Record<string, unknown>
  t.match(promoted, { id: alice.id, allowed_cidrs: ['10.0.0.0/8'] })
  t.notOk('shadow' in promoted, 'no shadow restriction left')
})
