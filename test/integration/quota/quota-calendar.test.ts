/**
 * The calendar (docs/quotas.md): a quota is refilled at its period's start, lazily. The
 * rollover is driven as an admin would drive it, by writing the period state of the meter
 * in Redis (the period counted is an earlier one), never by sleeping to midnight.
 */
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'

const DAY = 86_400_000

t.test('a day rolls over: the quota spent yesterday is whole again today', async (t) => {
  const gw = await startGateway(t)
  const bot = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'quota', '5/day')
  const statuses: number[] = []
  for (let i = 0; i < 7; i++) statuses.push((await gw.get('/api/v1/users', bot.key)).status)
  t.same(statuses, [200, 200, 200, 200, 200, 429, 429], '5 a day')
  const refused = await gw.get('/api/v1/users', bot.key)
  const today = Math.floor(Date.now() / DAY) * DAY
  const toMidnight = Math.ceil((today + DAY - Date.now()) / 1000)
  const retry = Number(refused.headers['retry-after'])
  t.ok(Math.abs(retry - toMidnight) <= 2, `Retry-After ${retry} s: to the next UTC midnight (${toMidnight} s)`)

  const meter = gw.fixtures.keys.meter('key', bot.id)
  t.same(await gw.client.hgetall(meter), { period: String(today), used: '5' }, 'the meter: today, 5 used')
  // the count is yesterday's, as it is when midnight has passed since the last request
  await gw.client.hset(meter, 'period', String(today - DAY))
  const after: number[] = []
  for (let i = 0; i < 6; i++) after.push((await gw.get('/api/v1/users', bot.key)).status)
  t.same(after, [200, 200, 200, 200, 200, 429], 'refilled: 5 more, then refused again')
  t.same(await gw.client.hgetall(meter), { period: String(today), used: '5' }, 'the new period stored with its count')
})

t.test('a month rolls over; a later period stored (a gateway clock ahead) is never counted back', async (t) => {
  const gw = await startGateway(t)
  const bot = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(bot.id), 'quota', '3/month')
  for (let i = 0; i < 3; i++) t.equal((await gw.get('/api/v1/users', bot.key)).status, 200)
  const refused = await gw.get('/api/v1/users', bot.key)
  t.equal(refused.status, 429)
  const now = new Date()
  const month = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)
  const retry = Number(refused.headers['retry-after'])
  t.ok(Math.abs(retry - Math.ceil((next - Date.now()) / 1000)) <= 2, `Retry-After ${retry} s: to the 1st of next month`)
  t.match(refused.headers['ratelimit-policy'], new RegExp(`^"key-quota";q=3;w=${(next - month) / 1000}$`))

  const meter = gw.fixtures.keys.meter('key', bot.id)
  const previous = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)
  await gw.client.hset(meter, 'period', String(previous))
  for (let i = 0; i < 3; i++) t.equal((await gw.get('/api/v1/users', bot.key)).status, 200, 'refilled in the new month')
  t.equal((await gw.get('/api/v1/users', bot.key)).status, 429)

  // a period later than this gateway's (another's clock ahead): its count holds, not reset
  await gw.client.hset(meter, 'period', String(next), 'used', '3')
  const ahead = await gw.get('/api/v1/users', bot.key)
  t.equal(ahead.status, 429, 'the later period\'s count holds')
  t.equal(await gw.client.hget(meter, 'period'), String(next), 'and is never moved back')
})
