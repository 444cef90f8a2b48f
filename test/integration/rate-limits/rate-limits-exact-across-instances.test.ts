/**
 * Rate limits, "exact across instances" (docs/rate-limits.md): gateways sharing one Redis share
 * every bucket, so however requests are spread over them, no more than `count` are
 * allowed in a window of the limit's period; after the reset, `count` more.
 */
import t, { type Test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import type { RawResponse } from '../../helpers/raw-http.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'

async function instances (t: Test, n: number): Promise<TestGateway[]> {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = uniquePrefix()
  const gws: TestGateway[] = []
  for (let i = 0; i < n; i++) gws.push(await startGateway(t, { redis, prefix, seed: i === 0 }))
  return gws
}

/** `n` concurrent requests, round-robin over the instances, each with the key given for its index. */
async function storm (gws: TestGateway[], n: number, keyOf: (i: number) => string): Promise<RawResponse[]> {
  return await Promise.all(Array.from({ length: n }, async (_, i) => await (gws[i % gws.length] as TestGateway).get('/api/v1/users', keyOf(i))))
}

const allowedOf = (list: RawResponse[]): number => list.filter((r) => r.status === 200).length

t.test('one key limited to 50/10s, 200 concurrent requests over 3 instances', async (t) => {
  const gws = await instances(t, 3)
  const first = gws[0] as TestGateway
  const bot = await first.fixtures.botKey('reader', 'acme')
  await first.client.hset(first.fixtures.keys.key(bot.id), 'rate_limit', '50/10s')
  // every instance has the key cached (its limit included) before the storm
  for (const gw of gws) t.equal((await gw.get('/api/v1/open/x', bot.key)).status, 200, 'warm')

  const round1 = await storm(gws, 200, () => bot.key)
  const ended = Date.now()
  // the three warm-up requests counted too
  t.equal(allowedOf(round1), 47, 'exactly 50 allowed in the window (3 warm-up + 47)')
  t.equal(round1.filter((r) => r.status === 429).length, 153, 'the rest refused with 429')
  t.same(new Set(round1.map((r) => r.status)), new Set([200, 429]), 'nothing else')
  const perInstance = gws.map((_, g) => allowedOf(round1.filter((_, i) => i % 3 === g)))
  t.comment(`allowed per instance: ${perInstance.join(', ')}`)

  const retry = Math.max(...round1.filter((r) => r.status === 429).map((r) => Number(r.headers['retry-after'])))
  t.ok(retry >= 1 && retry <= 11, `Retry-After ${retry} s`)
  // the whole window (and the sub-window read conservatively) after the last request
  // counted: on a loaded machine the storm spans several sub-windows, and Retry-After
  // names only when the first of them frees
  await sleep(Math.max(retry * 1000, 11_000 - (Date.now() - ended)) + 100)
  const round2 = await storm(gws, 200, () => bot.key)
  t.equal(allowedOf(round2), 50, 'after the reset: exactly 50 more')
})

t.test('an org limit is one bucket for every key of the org, on every instance', async (t) => {
  const gws = await instances(t, 3)
  const first = gws[0] as TestGateway
  await first.client.hset(first.fixtures.keys.org('acme'), 'rate_limit', '30/1m')
  const keys = await Promise.all([0, 1, 2, 3, 4].map(async () => (await first.fixtures.botKey('reader', 'acme')).key))
  const round = await storm(gws, 150, (i) => keys[i % keys.length] as string)
  t.equal(allowedOf(round), 30, '5 keys, 3 instances, 150 requests: 30 allowed')
})

t.test('a limit set with redis-cli applies on every instance within 1 s', async (t) => {
  const gws = await instances(t, 3)
  const first = gws[0] as TestGateway
  const bot = await first.fixtures.botKey('reader', 'acme')
  for (const gw of gws) t.equal((await gw.get('/api/v1/users', bot.key)).headers['ratelimit-limit'], undefined, 'warm, no limit')
  await first.client.hset(first.fixtures.keys.org('acme'), 'rate_limit', '500/1s')
  const since = Date.now()
  const arrived = await Promise.all(gws.map(async (gw) => {
    while (Date.now() - since < 3000) {
      if ((await gw.get('/api/v1/users', bot.key)).headers['ratelimit-limit'] === '500') return Date.now() - since
    }
    return -1
  }))
  t.ok(arrived.every((ms) => ms >= 0 && ms <= 1000), `HSET keygate:org:acme rate_limit 500/1s: on each instance after ${arrived.join(', ')} ms`)
})
