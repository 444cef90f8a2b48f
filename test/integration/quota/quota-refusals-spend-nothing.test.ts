/**
 * A request refused before it is forwarded spends nothing (docs/quotas.md): a 401 never
 * reaches the quota; a 403 and a rate limit's 429 are decided before it.
 */
import t from 'tap'
import { eventually, startGateway } from '../../helpers/gateway.js'

t.test('401, 403 and a rate limit\'s 429 spend nothing of the quota or the credits', async (t) => {
  const gw = await startGateway(t)
  const bot = await gw.fixtures.botKey('reader', 'acme')
  const record = gw.fixtures.keys.key(bot.id)
  await gw.client.hset(record, 'quota', '100/day', 'credits', '100', 'rate_limit', '2/1m')
  await gw.client.hset(gw.fixtures.keys.org('acme'), 'quota', '100/month')
  const meter = gw.fixtures.keys.meter('key', bot.id)
  const orgMeter = gw.fixtures.keys.meter('org', 'acme')

  const forged = `${bot.key.slice(0, -12)}${bot.key.slice(-12).split('').reverse().join('')}`
  t.equal((await gw.get('/api/v1/users', forged)).status, 401, 'a forged key: 401')
  const forbidden = await gw.send('POST', '/api/v1/users', [['Authorization', `Bearer ${bot.key}`], ['Content-Length', '0']])
  t.equal(forbidden.status, 403, 'a permission the key lacks: 403')
  t.equal(forbidden.headers.ratelimit, undefined, 'a 403 reveals no allowance')
  t.equal((await gw.get('/api/v1/nowhere', bot.key)).status, 403, 'no rule: 403')
  t.same(await gw.client.hgetall(meter), {}, 'nothing spent yet')

  const statuses: number[] = []
  for (let i = 0; i < 4; i++) statuses.push((await gw.get('/api/v1/users', bot.key)).status)
  t.same(statuses, [200, 200, 429, 429], 'the rate limit: 2 a minute')
  const limited = await gw.get('/api/v1/users', bot.key)
  t.equal((limited.json() as { error: { code: string } }).error.code, 'rate_limited', 'refused by the rate limit, not the quota')
  t.equal(await gw.client.hget(meter, 'used'), '2', 'the quota: the 2 allowed requests only')
  t.equal(await gw.client.hget(meter, 'spent'), '2', 'the credits: the same 2')
  t.equal(await gw.client.hget(orgMeter, 'used'), '2', 'the org quota: the same 2')
})

t.test('revoked and expired keys spend nothing', async (t) => {
  const gw = await startGateway(t)
  const bot = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'quota', '10/day', 'status', 'revoked')
  t.equal((await gw.get('/api/v1/users', bot.key)).status, 401)
  t.equal(await gw.client.exists(gw.fixtures.keys.meter('key', bot.id)), 0, 'no meter written')
})

t.test('a body refused after the decision (413) gives its fixed cost back', async (t) => {
  const gw = await startGateway(t, { yaml: 'limits: { body_bytes: 10 }\n' })
  const bot = await gw.fixtures.botKey('writer', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'quota', '10/day', 'credits', '10')
  const meter = gw.fixtures.keys.meter('key', bot.id)
  const auth: [string, string] = ['Authorization', `Bearer ${bot.key}`]
  t.equal((await gw.send('POST', '/api/v1/users', [auth, ['Content-Type', 'text/plain'], ['Content-Length', '3']], 'abc')).status, 200)
  const big = await gw.send('POST', '/api/v1/users', [auth, ['Content-Type', 'text/plain'], ['Content-Length', '100']], 'x'.repeat(100))
  t.equal(big.status, 413, 'a declared body over the limit: 413')
  t.ok(await eventually(async () => (await gw.client.hget(meter, 'used')) === '1' && (await gw.client.hget(meter, 'spent')) === '1', 1000, 10) >= 0,
    'only the forwarded request stays spent, of the quota and the credits')
})
