/**
 * Quotas and credits, "exact across instances" (docs/quotas.md): gateways sharing one
 * Redis spend one allowance, so however requests are spread over them, the units
 * allowed in a period never exceed the quota (fixed costs), and credits added by an
 * admin while requests are in flight count exactly once.
 */
import t, { type Test } from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import type { RawResponse } from '../../helpers/raw-http.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'

/** the default rules, with costs: users 1, an org's paths 3, open paths free */
export const COST_RULES = `
rules:
  - { method: GET,  path: /api/v1/users,        permissions: [users:read] }
  - { method: POST, path: /api/v1/users,        permissions: [users:write] }
  - { method: "*",  path: /api/v1/orgs/:org/*,  permissions: [], cost: 3 }
  - { method: GET,  path: /api/v1/open/*,       permissions: [], cost: 0 }
`

async function instances (t: Test, n: number): Promise<TestGateway[]> {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = uniquePrefix()
  const gws: TestGateway[] = []
  for (let i = 0; i < n; i++) gws.push(await startGateway(t, { redis, prefix, seed: i === 0, yaml: COST_RULES }))
  return gws
}

/** `n` concurrent requests, round-robin over the instances. */
async function storm (gws: TestGateway[], n: number, path: string, key: string): Promise<RawResponse[]> {
  return await Promise.all(Array.from({ length: n }, async (_, i) => await (gws[i % gws.length] as TestGateway).get(path, key)))
}

const allowedOf = (list: RawResponse[]): number => list.filter((r) => r.status === 200).length
const exceededOf = (list: RawResponse[]): number =>
  list.filter((r) => r.status === 429 && (r.json() as { error: { code: string } }).error.code === 'quota_exceeded').length

/** every instance holds the key's records (its allowance included) before the storm: a free request on each */
async function warm (t: Test, gws: TestGateway[], key: string): Promise<void> {
  for (const gw of gws) t.equal((await gw.get('/api/v1/open/x', key)).status, 200, 'warm, free')
}

t.test('a quota of 50/month, 200 concurrent requests over 3 instances: exactly 50 allowed', async (t) => {
  const gws = await instances(t, 3)
  const first = gws[0] as TestGateway
  const bot = await first.fixtures.botKey('reader', 'acme')
  await first.client.hset(first.fixtures.keys.key(bot.id), 'quota', '50/month')
  await warm(t, gws, bot.key)

  const round = await storm(gws, 200, '/api/v1/users', bot.key)
  t.equal(allowedOf(round), 50, 'exactly 50 allowed')
  t.equal(exceededOf(round), 150, 'the rest: 429 quota_exceeded')
  const perInstance = gws.map((_, g) => allowedOf(round.filter((_, i) => i % 3 === g)))
  t.ok(perInstance.filter((n) => n > 0).length >= 2, `allowed on several instances: ${perInstance.join(', ')}`)
  const ok = round.find((r) => r.status === 200) as RawResponse
  t.match(ok.headers['ratelimit-policy'], /^"key-quota";q=50;w=(2419200|2505600|2592000|2678400)$/, 'the policy: the month in seconds')
  t.match(ok.headers.ratelimit, /^"key-quota";r=\d+;t=\d+$/, 'what is left, and the seconds to the refill')
  const at = round.findIndex((r) => r.status === 429)
  const refused = round[at] as RawResponse
  t.match(refused.headers.ratelimit, /^"key-quota";r=0;t=\d+$/)
  t.equal(refused.headers['retry-after'], /t=(\d+)/.exec(refused.headers.ratelimit as string)?.[1], 'Retry-After: the refill')
  t.equal((await (gws[at % 3] as TestGateway).logOf(refused))?.reason, 'quota_exceeded', 'the log line\'s reason')
  t.equal((await first.client.hget(first.fixtures.keys.meter('key', bot.id), 'used')), '50', 'the meter holds 50')
  t.equal((await first.get('/api/v1/open/x', bot.key)).status, 200, 'a free route passes with the quota spent')
})

t.test('a cost of 3 against a quota of 50: 16 allowed (48 units), then 2 of cost 1; cost 0 is free', async (t) => {
  const gws = await instances(t, 3)
  const first = gws[0] as TestGateway
  const bot = await first.fixtures.botKey('reader', 'acme')
  await first.client.hset(first.fixtures.keys.key(bot.id), 'quota', '50/day')
  await warm(t, gws, bot.key)
  const free = await storm(gws, 60, '/api/v1/open/y', bot.key)
  t.equal(allowedOf(free), 60, 'cost 0: every request, nothing spent')
  t.equal(await first.client.hget(first.fixtures.keys.meter('key', bot.id), 'used'), null, 'nothing spent')

  const round = await storm(gws, 100, '/api/v1/orgs/acme/x', bot.key)
  t.equal(allowedOf(round), 16, '16 x 3 = 48 units')
  t.equal(exceededOf(round), 84)
  const ones = await storm(gws, 30, '/api/v1/users', bot.key)
  t.equal(allowedOf(ones), 2, 'the 2 units left, at cost 1')
  t.equal(await first.client.hget(first.fixtures.keys.meter('key', bot.id), 'used'), '50')
})

t.test('an org quota is one balance for every key of the org, on every instance', async (t) => {
  const gws = await instances(t, 3)
  const first = gws[0] as TestGateway
  await first.client.hset(first.fixtures.keys.org('acme'), 'quota', '40/week')
  const keys = await Promise.all([0, 1, 2, 3].map(async () => (await first.fixtures.botKey('reader', 'acme')).key))
  for (const k of keys) await warm(t, gws, k)
  const round = (await Promise.all(keys.map(async (k) => await storm(gws, 30, '/api/v1/users', k)))).flat()
  t.equal(allowedOf(round), 40, '4 keys, 3 instances, 120 requests: 40 allowed')
  const ok = round.find((r) => r.status === 200) as RawResponse
  t.match(ok.headers['ratelimit-policy'], /^"org-quota";q=40;w=604800$/, 'a week is 604800 s')
})

t.test('credits added while requests are in flight: every unit granted is spent once', async (t) => {
  const gws = await instances(t, 3)
  const first = gws[0] as TestGateway
  const bot = await first.fixtures.botKey('reader', 'acme')
  const record = first.fixtures.keys.key(bot.id)
  await first.client.hset(record, 'credits', '30')
  await warm(t, gws, bot.key)

  let answered = 0
  let added: Promise<number> | undefined
  const first200 = await Promise.all(Array.from({ length: 150 }, async (_, i) => {
    const res = await (gws[i % 3] as TestGateway).get('/api/v1/users', bot.key)
    // (an admin adds 20 credits when 60 answers are in, with 90 requests still in flight)
    if (++answered === 60) added = first.client.hincrby(record, 'credits', 20)
    return res
  }))
  await added
  const after = await storm(gws, 60, '/api/v1/users', bot.key)
  t.equal(allowedOf(first200) + allowedOf(after), 50, '30 + 20 credits: 50 allowed in all')
  const last = after.find((r) => r.status === 429) as RawResponse
  t.equal(last.headers['retry-after'], undefined, 'no Retry-After: credits have no refill')
  t.match(last.headers['ratelimit-policy'], /^"key-credits";q=50$/, 'the policy: the credits granted')
  t.match(last.headers.ratelimit, /^"key-credits";r=0$/)
  t.equal(await first.client.hget(first.fixtures.keys.meter('key', bot.id), 'spent'), '50')
})
