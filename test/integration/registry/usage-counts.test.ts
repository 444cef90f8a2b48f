/**
 * Per-key usage counts across two gateway instances on one registry, read back through
 * the admin API after one flush interval:
 *
 *   key          on instance 1                  on instance 2      allowed refused limited errors
 *   alice        3 GET (200), 2 POST (403)      2 GET (200)        5       2       0       0
 *   limited bot  4 GET (limit 2/1m: 2 200, 2 429) 1 GET (429)      2       0       3       0
 *   dead bot     2 GET to a dead upstream (502)  1 revoked (401)   0       1       0       2
 *
 * The minutes and the hours agree (the flush writes both); the org sums its keys; a
 * refusal of a key that does not exist is not counted; the minute hashes expire after
 * 48 h and the hour hashes after usage.retention; a self principal reads its own
 * key's usage and gets 404 for another's; a range of too many points is a 400.
 */
import t from 'tap'
import { adminCall, eventually, startGateway } from '../../helpers/gateway.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import { startUpstream } from '../../helpers/upstream.js'

const TOKEN = 'usage-admin-token-0123456789abcdef'
interface Point { t: string, allowed: number, refused: number, limited: number, errors: number }
type Totals = Omit<Point, 't'>

const YAML = `
usage: { flush_ms: 100, retention: 3d }
upstreams:
  core: { url: "UPSTREAM", timeout_ms: 2000, connect_timeout_ms: 1000 }
  dead: { url: "http://127.0.0.1:9", timeout_ms: 1000, connect_timeout_ms: 500 }
routes:
  - { prefix: /api/v1, upstream: core }
  - { prefix: /dead, upstream: dead }
rules:
  - { method: GET,  path: /api/v1/users, permissions: [users:read] }
  - { method: POST, path: /api/v1/users, permissions: [users:write] }
  - { method: GET,  path: /dead/*,       permissions: [users:read] }
`

function sum (points: Point[]): Totals {
  const s = { allowed: 0, refused: 0, limited: 0, errors: 0 }
  for (const p of points) { s.allowed += p.allowed; s.refused += p.refused; s.limited += p.limited; s.errors += p.errors }
  return s
}

t.test('counts are exact across two instances, per minute and per hour, per key and per org', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = uniquePrefix()
  const configure = { redis, prefix, env: { KEYGATE_ADMIN_TOKEN: TOKEN } }
  const upstream = await startUpstream()
  t.teardown(() => upstream.close())
  const gw1 = await startGateway(t, { ...configure, yaml: YAML.replace('UPSTREAM', upstream.url) })
  const gw2 = await startGateway(t, { ...configure, seed: false, yaml: YAML.replace('UPSTREAM', upstream.url) })
  const f = gw1.fixtures
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])
  await f.user('sam', 'globex', 'selfreader')
  const sam = await f.personalKey('sam')
  const alice = await f.personalKey('alice')
  const { result: limitedKey } = await f.admin.createKey({
    type: 'bot',
    role: 'reader',
    org: 'acme',
    rateLimit: '2/1m'
  })
  const deadKey = await f.botKey('reader', 'acme')
  const start = Date.now()

  const statuses: number[] = []
  const on = async (gw: typeof gw1, method: string, path: string, key: string): Promise<void> => {
    statuses.push((await gw.send(method, path, { Authorization: `Bearer ${key}` })).status)
  }
  for (let i = 0; i < 3; i++) await on(gw2, 'GET', '/api/v1/users', alice.key)
  for (let i = 0; i < 2; i++) await on(gw2, 'POST', '/api/v1/users', alice.key)
  for (let i = 0; i < 2; i++) await on(gw1, 'GET', '/api/v1/users', alice.key)
  for (let i = 0; i < 4; i++) await on(gw2, 'GET', '/api/v1/users', limitedKey.key)
  await on(gw1, 'GET', '/api/v1/users', limitedKey.key)
  for (let i = 0; i < 2; i++) await on(gw2, 'GET', '/dead/x', deadKey.key)
  // a key that does not exist: refused, and counted nowhere
  const ghost = await f.botKey('reader', 'acme')
  await gw1.client.del(f.keys.key(ghost.id))
  await on(gw1, 'GET', '/api/v1/users', ghost.key)
  await f.admin.revokeKey(deadKey.id)
  // one refusal once the revocation reached gw1 (a GET before that went to the dead upstream: one more 502)
  let deadGets = 0
  await eventually(async () => { deadGets++; return (await gw1.get('/dead/x', deadKey.key)).status === 401 })
  const errors = 2 + deadGets - 1
  t.same(statuses, [200, 200, 200, 403, 403, 200, 200, 200, 200, 429, 429, 429, 502, 502, 401], 'each request had the outcome the table expects')

  const usage = async (path: string, query: string): Promise<{ status: number, points: Point[] }> => {
    const res = await adminCall(gw2, 'GET', `${path}?${query}`, TOKEN)
    return { status: res.status, points: res.status === 200 ? (res.json() as { points: Point[] }).points : [] }
  }
  const from = new Date(start - 120_000).toISOString()
  const to = new Date(Date.now() + 60_000).toISOString()
  const minutes = `from=${from}&to=${to}&step=1m`
  const expected: Record<string, Totals> = {
    [alice.id]: { allowed: 5, refused: 2, limited: 0, errors: 0 },
    [limitedKey.id]: { allowed: 2, limited: 3, refused: 0, errors: 0 },
    [deadKey.id]: { allowed: 0, refused: 1, limited: 0, errors }
  }
  // one flush interval (100 ms) and then some: every count is written
  await new Promise((resolve) => setTimeout(resolve, 400))
  for (const [id, totals] of Object.entries(expected)) {
    const m = await usage(`/admin/v1/keys/${id}/usage`, minutes)
    t.equal(m.status, 200)
    t.same(sum(m.points), totals, `key ${id}: exactly the requests made, per minute`)
    const h = await usage(`/admin/v1/keys/${id}/usage`, `from=${from}&to=${to}&step=1h`)
    t.same(sum(h.points), totals, 'the hours hold the same totals')
    const d = await usage(`/admin/v1/keys/${id}/usage`, `from=${from}&to=${to}&step=1d`)
    t.same(sum(d.points), totals, 'and the days')
  }
  const org = await usage('/admin/v1/orgs/acme/usage', minutes)
  t.same(sum(org.points), { allowed: 7, refused: 3, limited: 3, errors }, 'the org sums its keys (the revoked key\'s org read from its record)')
  const ghostKeys = await gw1.client.keys(`${prefix}usage:{${ghost.id}}*`)
  t.same(ghostKeys, [], 'a key that does not exist is not counted')

  const m = await usage(`/admin/v1/keys/${alice.id}/usage`, minutes)
  t.ok(m.points.length >= 3 && m.points.length <= 6, 'one point per minute of the range')
  t.match(m.points[0], { t: /^\d{4}-\d\d-\d\dT\d\d:\d\d:00\.000Z$/ })

  // retention: minutes 48 h (to the end of their hour), hours usage.retention (3 d, to the end of their day)
  const hour = Math.floor(start / 3_600_000)
  const minuteTtl = await gw1.client.ttl(`${prefix}usage:{${alice.id}}:m:${hour}`)
  t.ok(minuteTtl > 47 * 3600 && minuteTtl <= 49 * 3600, `the minutes expire after 48 h (ttl ${minuteTtl} s)`)
  const dayTtl = await gw1.client.ttl(`${prefix}usage:{${alice.id}}:h:${Math.floor(start / 86_400_000)}`)
  t.ok(dayTtl > 3 * 86_400 - 60 && dayTtl <= 4 * 86_400, `the hours expire after usage.retention (ttl ${dayTtl} s)`)
  const orgTtl = await gw1.client.ttl(`${prefix}usage-org:{acme}:h:${Math.floor(start / 86_400_000)}`)
  t.ok(orgTtl > 3 * 86_400 - 60 && orgTtl <= 4 * 86_400, 'the org\'s hours too')

  // scope: a self principal reads its own key, not another's (404 as if absent), nor an org
  const own = await adminCall(gw1, 'GET', `/admin/v1/keys/${sam.id}/usage`, sam.key)
  t.equal(own.status, 200, 'a self principal reads its own key\'s usage')
  t.equal((own.json() as { points: Point[] }).points.length, 24, 'the last 24 h by the hour, by default')
  t.equal((await adminCall(gw1, 'GET', `/admin/v1/keys/${alice.id}/usage`, sam.key)).status, 404, 'another user\'s key: 404')
  t.equal((await adminCall(gw1, 'GET', '/admin/v1/orgs/acme/usage', sam.key)).status, 403, 'an org: refused to a self principal')
  // bounds
  const tooMany = await adminCall(gw1, 'GET', `/admin/v1/keys/${alice.id}/usage?from=2020-01-01T00:00:00Z&to=2021-01-01T00:00:00Z&step=1m`, TOKEN)
  t.equal(tooMany.status, 400, 'a range of too many points: 400')
  t.equal((await adminCall(gw1, 'GET', `/admin/v1/keys/${alice.id}/usage?from=yesterday`, TOKEN)).status, 400, 'a time that is not ISO 8601: 400')
  t.equal((await adminCall(gw1, 'GET', `/admin/v1/keys/${alice.id}/usage?step=5m`, TOKEN)).status, 400, 'an unknown step: 400')
})
