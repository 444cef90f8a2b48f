/**
 * An identity's keys and request counts through the admin API (docs/identities.md,
 * docs/admin-api.md), on a running gateway with real Redis and requests of real keys:
 * `GET /identities/{id}/keys` lists the keys that name it as key views;
 * `GET /identities/{id}/usage` sums their counts (allowed, refused, limited) and says how
 * many keys it summed; a key's view (`GET /keys/{id}`, `keygate keys show`) carries its
 * own `meta` and its identity. An org admin reads its own org's identities only (another
 * org's: 404); a self principal none (403).
 */
import t from 'tap'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { adminCall as call, startGateway } from '../../helpers/gateway.js'

const TOKEN = 'identity-usage-admin-token-0123456789abcdef'
interface Point { t: string, allowed: number, refused: number, limited: number, errors: number }

t.test('an identity\'s keys, its summed usage, and a key\'s meta on its view', async (t) => {
  const gw = await startGateway(t, { yaml: 'usage: { flush_ms: 100 }', env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  t.equal((await call(gw, 'PUT', '/admin/v1/identities/cust-1', TOKEN, { org: 'acme', external_id: 'cus_1', rate_limit: '4/1m' })).status, 201)
  const key = async (body: Record<string, unknown>): Promise<{ id: string, key: string }> => {
    const r = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'acme', ...body })
    t.equal(r.status, 201, r.body)
    return r.json() as { id: string, key: string }
  }
  const a = await key({ identity: 'cust-1', name: 'a', meta: { region: 'eu', seats: 2 } })
  const b = await key({ identity: 'cust-1', name: 'b' })
  const outside = await key({ name: 'outside' })
  const statuses: number[] = []
  for (const k of [a, a, b, b, b]) statuses.push((await gw.get('/api/v1/users', k.key)).status)
  statuses.push((await gw.send('POST', '/api/v1/users', [['Authorization', `Bearer ${a.key}`]])).status)
  statuses.push((await gw.get('/api/v1/users', outside.key)).status)
  t.same(statuses, [200, 200, 200, 200, 429, 403, 200], 'four allowed, one over the identity\'s 4/1m, one refused; one outside it')
  await gw.app.counter.flush()

  const keys = await call(gw, 'GET', '/admin/v1/identities/cust-1/keys', TOKEN)
  t.equal(keys.status, 200)
  const listed = (keys.json() as { keys: Array<Record<string, unknown>> }).keys
  t.same(listed.map((k) => k.id).sort(), [a.id, b.id].sort(), 'the keys that name it, none other')
  t.ok(listed.every((k) => k.identity === 'cust-1' && k.status === 'active' && k.org === 'acme'), 'as key views')

  const usage = await call(gw, 'GET', '/admin/v1/identities/cust-1/usage', TOKEN)
  t.equal(usage.status, 200)
  const u = usage.json() as { keys: number, points: Point[] }
  t.equal(u.keys, 2)
  t.equal(u.points.length, 24, '24 hours by the hour, as a key\'s')
  const sum = (field: keyof Omit<Point, 't'>): number => u.points.reduce((n, p) => n + p[field], 0)
  t.same([sum('allowed'), sum('limited'), sum('refused')], [4, 1, 1], 'the sum of its two keys, the key outside it apart')
  const minutes = (await call(gw, 'GET', '/admin/v1/identities/cust-1/usage?step=1m&from=' + new Date(Date.now() - 3_600_000).toISOString(), TOKEN)).json() as { points: Point[] }
  t.equal(minutes.points.reduce((n, p) => n + p.allowed, 0), 4, 'by the minute too')
  const empty = (await call(gw, 'GET', '/admin/v1/identities/none/usage', TOKEN))
  t.equal(empty.status, 404, 'a missing identity: 404')

  // a key's view: its own meta and its identity; a key without meta has none
  const shown = (await call(gw, 'GET', `/admin/v1/keys/${a.id}`, TOKEN)).json() as Record<string, unknown>
  t.same([shown.identity, shown.meta], ['cust-1', { region: 'eu', seats: 2 }])
  t.equal(((await call(gw, 'GET', `/admin/v1/keys/${b.id}`, TOKEN)).json() as Record<string, unknown>).meta, undefined)
  const cli = await runCli(['keys', 'show', a.id], cliEnv(gw))
  t.equal(cli.code, 0, cli.stderr)
  t.match(cli.stdout, /^identity +cust-1$/m, 'keys show: its identity')
  t.match(cli.stdout, /^meta +\{"region":"eu","seats":2\}$/m, 'keys show: its meta as JSON')
  const cliJson = await runCli(['keys', 'show', a.id, '--json'], cliEnv(gw))
  t.same((JSON.parse(cliJson.stdout) as { meta: unknown }).meta, { region: 'eu', seats: 2 })

  // an org admin: its own org's identities only; a self principal: none
  await gw.client.hset(gw.fixtures.keys.role('admin'), 'permissions', 'keygate:org:admin users:read')
  const acmeAdmin = await gw.fixtures.botKey('admin', 'acme')
  const globexAdmin = await gw.fixtures.botKey('admin', 'globex')
  t.equal((await call(gw, 'GET', '/admin/v1/identities/cust-1/keys', acmeAdmin.key)).status, 200, 'its own org\'s')
  t.equal((await call(gw, 'GET', '/admin/v1/identities/cust-1/usage', acmeAdmin.key)).status, 200)
  t.equal((await call(gw, 'GET', '/admin/v1/identities/cust-1/keys', globexAdmin.key)).status, 404, 'another org\'s: 404')
  t.equal((await call(gw, 'GET', '/admin/v1/identities/cust-1/usage', globexAdmin.key)).status, 404)
  await gw.fixtures.role('selfish', ['keygate:keys:self', 'users:read'])
  await gw.fixtures.user('sam', 'acme', 'selfish')
  const sam = await gw.fixtures.personalKey('sam')
  t.equal((await call(gw, 'GET', '/admin/v1/identities/cust-1/keys', sam.key)).status, 403, 'a self principal: 403')
  t.equal((await call(gw, 'GET', '/admin/v1/identities/cust-1/usage', sam.key)).status, 403)
})
