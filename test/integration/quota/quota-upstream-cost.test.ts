/**
 * `cost: upstream` (docs/quotas.md#costs): the upstream reports a request's cost in
 * X-Keygate-Cost, which the client never sees; it is debited after the response; a
 * response without it (or with a value that is not a number) costs the rule's
 * default_cost. Such a request starts when 1 unit is left, so the overdraft is at most
 * the costs of the requests in flight when the balance ran out.
 */
import t from 'tap'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'

const RULES = `
rules:
  - { method: GET, path: /api/v1/users,   permissions: [users:read], cost: upstream }
  - { method: GET, path: /api/v1/open/*,  permissions: [], cost: upstream, default_cost: 5 }
`

async function used (gw: TestGateway, id: string): Promise<number> {
  return Number(await gw.client.hget(gw.fixtures.keys.meter('key', id), 'used') ?? 0)
}

t.test('the reported cost is debited and removed; missing or bad, the default', async (t) => {
  const gw = await startGateway(t, { yaml: RULES })
  const bot = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'quota', '100/day')

  gw.upstream.setMode({ kind: 'status', status: 200, body: '{}', headers: { 'X-Keygate-Cost': '7' } })
  const res = await gw.get('/api/v1/users', bot.key)
  t.equal(res.status, 200)
  t.equal(res.headers['x-keygate-cost'], undefined, 'the client never sees the cost header')
  t.match(res.headers.ratelimit, /^"key-quota";r=100;/, 'the headers: as it stood when the request started')
  t.ok(await eventually(async () => await used(gw, bot.id) === 7, 1000, 10) >= 0, 'debited 7 after the response')

  gw.upstream.setMode({ kind: 'status', status: 200, body: '{}', headers: { 'X-Keygate-Cost': 'lots' } })
  await gw.get('/api/v1/users', bot.key)
  t.ok(await eventually(async () => await used(gw, bot.id) === 8, 1000, 10) >= 0, 'not a number: the default, 1')
  gw.upstream.setMode('echo')
  await gw.get('/api/v1/open/x', bot.key)
  t.ok(await eventually(async () => await used(gw, bot.id) === 13, 1000, 10) >= 0, 'no header: the rule\'s default_cost, 5')

  // an unmetered key: the header is removed all the same, nothing counted
  const plain = await gw.fixtures.botKey('reader', 'acme')
  gw.upstream.setMode({ kind: 'status', status: 200, body: '{}', headers: { 'X-Keygate-Cost': '7' } })
  t.equal((await gw.get('/api/v1/users', plain.key)).headers['x-keygate-cost'], undefined)
  t.equal(await gw.client.exists(gw.fixtures.keys.meter('key', plain.id)), 0)
})

t.test('the overdraft: at most the costs of the requests in flight when the balance ran out', async (t) => {
  const gw = await startGateway(t, { yaml: RULES })
  const bot = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'quota', '10/day')
  t.equal((await gw.get('/api/v1/open/x', bot.key)).status, 200, 'warm')
  t.ok(await eventually(async () => await used(gw, bot.id) === 5, 1000, 10) >= 0, '5 left')

  // 20 requests, each 5 units, all in flight before any response: each starts with 5 left
  gw.upstream.setMode({ kind: 'slow', delayMs: 400 })
  const inFlight = await Promise.all(Array.from({ length: 20 }, async () => await gw.get('/api/v1/open/x', bot.key)))
  const started = inFlight.filter((r) => r.status === 200).length
  t.equal(started, 20, 'all 20 started: 1 unit or more was left for each')
  t.ok(await eventually(async () => await used(gw, bot.id) === 105, 2000, 10) >= 0, 'debited after: 5 + 20 x 5 = 105')
  const overdraft = await used(gw, bot.id) - 10
  t.ok(overdraft > 0 && overdraft <= started * 5, `the overdraft (${overdraft}) is within the bound: ${started} in flight x their cost 5`)

  gw.upstream.setMode('echo')
  const after = await gw.get('/api/v1/open/x', bot.key)
  t.equal(after.status, 429, 'overdrawn: the next request is refused')
  t.match(after.headers.ratelimit, /^"key-quota";r=0;/, 'shown as 0 left, never negative')
})

t.test('the authorizer never sees the response: a cost: upstream request spends its default_cost once allowed', async (t) => {
  const gw = await startGateway(t, { yaml: `authz_listen: "127.0.0.1:0"\n${RULES}` })
  const bot = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'quota', '12/day')
  const ask = async (): Promise<number> => (await gw.authz('GET', '/_keygate', [
    ['Authorization', `Bearer ${bot.key}`], ['X-Original-Method', 'GET'], ['X-Original-URI', '/api/v1/open/x']
  ])).status
  t.equal(await ask(), 200)
  t.ok(await eventually(async () => await used(gw, bot.id) === 5, 1000, 10) >= 0, 'default_cost 5 debited')
  t.equal(await ask(), 200)
  t.equal(await ask(), 200, '2 left: still at least 1')
  t.ok(await eventually(async () => await used(gw, bot.id) === 15, 1000, 10) >= 0)
  t.equal(await ask(), 429, 'then refused')
})
