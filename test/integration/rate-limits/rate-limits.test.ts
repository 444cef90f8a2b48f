/**
 * Rate limits (docs/rate-limits.md), end to end: real Redis, real upstream, a real
 * gateway. Limits are set as an admin would with redis-cli (HSET ... rate_limit);
 * the CLI and the admin API have their own tests.
 */
import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { watchGatewayRedis } from '../../helpers/redis-monitor.js'
import type { RawResponse } from '../../helpers/raw-http.js'

const RATE_HEADERS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'] as const

function limitHeaders (res: RawResponse): { limit: number, remaining: number, reset: number } {
  return {
    limit: Number(res.headers['ratelimit-limit']),
    remaining: Number(res.headers['ratelimit-remaining']),
    reset: Number(res.headers['ratelimit-reset'])
  }
}

/** Sends `n` requests one after another; the statuses. */
async function statuses (gw: TestGateway, key: string, n: number, path = '/api/v1/users'): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < n; i++) out.push((await gw.get(path, key)).status)
  return out
}

t.test('the strictest of the key, role, org and default limits decides', async (t) => {
  const gw = await startGateway(t, { yaml: 'rate_limits: { default: "8/1m" }\n' })
  const { fixtures, client } = gw
  const k = fixtures.keys

  await fixtures.role('limited', ['users:read'])
  await client.hset(k.role('limited'), 'rate_limit', '5/1m')

  // the default alone: 8 in the window
  const plain = await fixtures.botKey('reader', 'globex')
  t.same(await statuses(gw, plain.key, 9), [...Array(8).fill(200), 429], 'the default (8/1m) for a key with no limit of its own')

  // a key limit replaces the default (higher than it, too)
  const own = await fixtures.botKey('reader', 'globex')
  await client.hset(k.key(own.id), 'rate_limit', '10/1m')
  t.same(await statuses(gw, own.key, 11), [...Array(10).fill(200), 429], "the key's own limit (10/1m) replaces the default")

  // the role's limit is stricter than the default: it decides; each key has its own bucket
  const r1 = await fixtures.botKey('limited', 'globex')
  const r2 = await fixtures.botKey('limited', 'globex')
  t.same(await statuses(gw, r1.key, 6), [...Array(5).fill(200), 429], 'the role limit (5/1m) under the default (8/1m) decides')
  t.same(await statuses(gw, r2.key, 6), [...Array(5).fill(200), 429], 'another key with the role has a bucket of its own')

  // an org limit is one bucket for every key of the org
  await client.hset(k.org('initech'), 'rate_limit', '3/1m')
  const o1 = await fixtures.botKey('reader', 'initech')
  const o2 = await fixtures.botKey('reader', 'initech')
  const shared = [...await statuses(gw, o1.key, 2), ...await statuses(gw, o2.key, 2)]
  t.same(shared, [200, 200, 200, 429], 'the org limit (3/1m) is shared by the keys of the org')

  // a key's own limit stricter than its org's
  await client.hset(k.org('umbrella'), 'rate_limit', '50/1m')
  const tight = await fixtures.botKey('reader', 'umbrella')
  await client.hset(k.key(tight.id), 'rate_limit', '2/1m')
  const res = [await gw.get('/api/v1/users', tight.key), await gw.get('/api/v1/users', tight.key), await gw.get('/api/v1/users', tight.key)]
  t.same(res.map((r) => r.status), [200, 200, 429], 'the key (2/1m) under its org (50/1m)')
  t.same(limitHeaders(res[0] as RawResponse).limit, 2, 'the headers name the strictest limit')
  t.same(limitHeaders(res[0] as RawResponse).remaining, 1, 'one left after the first')
  t.same(limitHeaders(res[1] as RawResponse).remaining, 0, 'none left after the second')

  // the same world, through a personal key: the user's role and the key's org
  await client.hset(k.role('reader'), 'rate_limit', '4/1m')
  await sleep(50)
  const alice = await fixtures.personalKey('alice')
  t.same(await statuses(gw, alice.key, 5), [200, 200, 200, 200, 429], "a personal key: its user's role's limit (4/1m)")
})

t.test('headers: values, a proxied response carries them, a 429 has Retry-After', async (t) => {
  const gw = await startGateway(t)
  const bot = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'rate_limit', '3/10s')

  const first = await gw.get('/api/v1/users', bot.key)
  t.equal(first.status, 200, 'allowed and proxied')
  t.equal(first.headers['x-upstream'], 'yes', 'the upstream answered')
  const h = limitHeaders(first)
  t.same([h.limit, h.remaining], [3, 2], 'RateLimit-Limit 3, RateLimit-Remaining 2')
  t.ok(h.reset >= 1 && h.reset <= 11, `RateLimit-Reset within one period and a slot: ${h.reset}`)
  t.equal(first.headers['retry-after'], undefined, 'no Retry-After on an allowed request')

  await gw.get('/api/v1/users', bot.key)
  await gw.get('/api/v1/users', bot.key)
  const refused = await gw.get('/api/v1/users', bot.key)
  t.equal(refused.status, 429)
  t.same(refused.json(), { error: { code: 'rate_limited', message: 'Too many requests', status: 429 } }, 'the catalogue body')
  const retry = Number(refused.headers['retry-after'])
  t.ok(Number.isInteger(retry) && retry >= 1 && retry <= 11, `Retry-After whole seconds, at least 1: ${refused.headers['retry-after']}`)
  t.same(limitHeaders(refused), { limit: 3, remaining: 0, reset: retry }, 'RateLimit-Reset agrees with Retry-After')
  const line = await gw.logOf(refused)
  t.equal(line?.reason, 'rate_limited', 'log reason rate_limited')
  t.equal(line?.key_id, bot.id)

  // the upstream's own RateLimit-* are replaced by the gateway's
  const other = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(other.id), 'rate_limit', '7/10s')
  gw.upstream.setMode({ kind: 'status', status: 200, body: '{}', headers: { 'RateLimit-Limit': '999', 'RateLimit-Remaining': '998', 'X-Upstream': 'yes' } })
  const proxied = await gw.get('/api/v1/users', other.key)
  t.equal(proxied.headers['x-upstream'], 'yes', "the upstream's response")
  t.same([proxied.headers['ratelimit-limit'], proxied.headers['ratelimit-remaining']], ['7', '6'], "the gateway's RateLimit-* replace the upstream's")
})

t.test('refused requests consume nothing; a 401 reveals no limit', async (t) => {
  const gw = await startGateway(t)
  const { fixtures, client } = gw
  const bot = await fixtures.botKey('reader', 'acme')
  await client.hset(fixtures.keys.key(bot.id), 'rate_limit', '2/1m')
  await client.hset(fixtures.keys.org('acme'), 'rate_limit', '2/1m')
  const wrongSecret = bot.key.slice(0, -8) + (bot.key.endsWith('A') ? 'B' : 'A').repeat(8)

  for (let i = 0; i < 5; i++) {
    const r401 = await gw.get('/api/v1/users', wrongSecret)
    t.ok(r401.status === 401, `401 (${r401.status})`)
    for (const h of RATE_HEADERS) t.equal(r401.headers[h], undefined, `a 401 carries no ${h}`)
    t.equal((await gw.get('/api/v1/admin-only', bot.key)).status, 403, '403: no rule')
    t.equal((await gw.get('/api/v1/orgs/globex/x', bot.key)).status, 403, '403: another org')
    t.equal((await gw.get('/nowhere', bot.key)).status, 404, '404: no route')
    t.equal((await gw.send('GET', '/api/v1/../users', { Authorization: `Bearer ${bot.key}` })).status, 400, '400: bad path')
  }
  const r403 = await gw.get('/api/v1/admin-only', bot.key)
  for (const h of RATE_HEADERS) t.equal(r403.headers[h], undefined, `a 403 carries no ${h} either (limits are checked after authorization)`)
  t.same(await statuses(gw, bot.key, 3), [200, 200, 429], 'after 25 refused requests, the whole limit is still there')
  const other = await fixtures.botKey('reader', 'acme')
  t.equal((await gw.get('/api/v1/users', other.key)).status, 429, 'the org bucket (2/1m) was used by the two allowed requests only')
})

t.test('Retry-After says when the next request is allowed', async (t) => {
  const gw = await startGateway(t)
  const bot = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'rate_limit', '2/2s')
  t.same(await statuses(gw, bot.key, 2), [200, 200])
  const refused = await gw.get('/api/v1/users', bot.key)
  t.equal(refused.status, 429)
  const retry = Number(refused.headers['retry-after'])
  const refusedAt = Date.now()
  // polled from a second bucket view: when does a request go through again?
  let allowedAfter = -1
  while (Date.now() - refusedAt < 5000) {
    await sleep(50)
    const res = await gw.get('/api/v1/users', bot.key)
    if (res.status === 200) {
      allowedAfter = (Date.now() - refusedAt) / 1000
      break
    }
  }
  t.ok(allowedAfter > 0, `allowed again after ${allowedAfter} s`)
  t.ok(Math.abs(allowedAfter - retry) <= 1, `Retry-After ${retry} s agrees with ${allowedAfter.toFixed(2)} s (±1 s)`)
})

t.test('a limit costs one Redis command per request; no limit costs none', async (t) => {
  const gw = await startGateway(t)
  const plain = await gw.fixtures.botKey('reader', 'globex')
  const limited = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(limited.id), 'rate_limit', '1000/1s')
  await gw.client.hset(gw.fixtures.keys.org('acme'), 'rate_limit', '1000/1s')
  await sleep(50)
  t.equal((await gw.get('/api/v1/users', plain.key)).status, 200, 'warm')
  t.equal((await gw.get('/api/v1/users', limited.key)).status, 200, 'warm')

  const unlimited = await watchGatewayRedis(gw, async () => {
    for (let i = 0; i < 10; i++) t.equal((await gw.get('/api/v1/users', plain.key)).status, 200)
  })
  t.same(unlimited.commands, [], 'no limit applies: ten requests, no Redis command')
  const { commands } = await watchGatewayRedis(gw, async () => {
    for (let i = 0; i < 10; i++) t.equal((await gw.get('/api/v1/users', limited.key)).status, 200)
  })
  t.equal(commands.length, 10, 'ten limited requests (key and org buckets), ten commands')
  t.ok(commands.every((c) => c.toLowerCase().startsWith('evalsha')), `each an EVALSHA: ${commands[0]?.slice(0, 120) ?? ''}`)
})

t.test('a limit changed with redis-cli applies within 1 s', async (t) => {
  const gw = await startGateway(t)
  const bot = await gw.fixtures.botKey('reader', 'acme')
  t.equal((await gw.get('/api/v1/users', bot.key)).headers['ratelimit-limit'], undefined, 'no limit yet')
  await gw.client.hset(gw.fixtures.keys.org('acme'), 'rate_limit', '500/1s')
  const ms = await eventually(async () => (await gw.get('/api/v1/users', bot.key)).headers['ratelimit-limit'] === '500', 1000, 10)
  t.ok(ms >= 0, `the org limit applied after ${ms} ms`)
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'rate_limit', '400/1s')
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', bot.key)).headers['ratelimit-limit'] === '400', 1000, 10) >= 0, 'the key limit applied')
  await gw.client.hdel(gw.fixtures.keys.key(bot.id), 'rate_limit')
  await gw.client.del(gw.fixtures.keys.org('acme'))
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', bot.key)).headers['ratelimit-limit'] === undefined, 1000, 10) >= 0, 'removed: no limit')
})

t.test('a malformed limit in a record allows nothing, and never a 500', async (t) => {
  const gw = await startGateway(t)
  const { fixtures, client } = gw
  const k = fixtures.keys
  const cases: Array<[string, string, string]> = [
    ['the key record', 'key', '10 per second'],
    ['the role record', 'role', '0/1s'],
    ['the org record', 'org', '5/1ms']
  ]
  for (const [what, level, value] of cases) {
    await fixtures.role(`bad-${level}`, ['users:read'])
    const bot = await fixtures.botKey(`bad-${level}`, `org-${level}`)
    const target = level === 'key' ? k.key(bot.id) : level === 'role' ? k.role(`bad-${level}`) : k.org(`org-${level}`)
    await client.hset(target, 'rate_limit', value)
    await sleep(30)
    const res = await gw.get('/api/v1/users', bot.key)
    t.equal(res.status, 429, `${what}: rate_limit ${JSON.stringify(value)} refuses (${res.status})`)
    t.ok(Number(res.headers['retry-after']) >= 1, 'with a Retry-After')
    t.equal((await gw.logOf(res))?.reason, 'invalid_record', 'logged as invalid_record')
    // and a wrong-secret request for the same key still gets its 401, with no limit shown
    t.equal((await gw.get('/api/v1/users', bot.key.slice(0, -6) + 'AAAAAA')).status, 401)
  }
  // the wrong Redis type for the org record: a bad record, refused, not a 500
  const bot = await fixtures.botKey('reader', 'wrongtype')
  await client.set(k.org('wrongtype'), 'x')
  const res = await gw.get('/api/v1/users', bot.key)
  t.not(res.status, 500, `an org record of the wrong Redis type: ${res.status}`)
  t.not(res.status, 200, 'and not allowed')
})

t.test('metrics: allowed, limited by level and source, blocked buckets', async (t) => {
  const gw = await startGateway(t)
  const bot = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'rate_limit', '2/1m')
  t.same(await statuses(gw, bot.key, 5), [200, 200, 429, 429, 429])
  const text = (await gw.admin('GET', '/metrics')).body
  t.match(text, /^keygate_rate_limit_allowed_total 2$/m, 'two allowed')
  t.match(text, /^keygate_rate_limited_total\{level="key",source="redis"\} 1$/m, 'the first refusal from Redis')
  t.match(text, /^keygate_rate_limited_total\{level="key",source="local"\} 2$/m, 'the next two from the block held in process')
  t.match(text, /^keygate_rate_limit_blocked_buckets 1$/m, 'one bucket blocked')
  t.match(text, /^keygate_requests_total\{[^}]*reason="rate_limited"[^}]*\} 3$/m, 'requests counted with reason rate_limited')
})
