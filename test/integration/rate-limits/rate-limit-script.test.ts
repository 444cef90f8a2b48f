/**
 * The Lua script (src/ratelimit/script.ts) against its specification in TypeScript
 * (src/ratelimit/window.ts), on a real redis-server: the same requests, at the same
 * clock readings, get the same answers, used counts and reset times, bucket by
 * bucket; a refused request counts in no bucket; buckets expire.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { parseRateLimit, type RateLimit } from '../../../src/config/rate-limit.js'
import { RateLimitScript } from '../../../src/ratelimit/script.js'
import { take, type Counts } from '../../../src/ratelimit/window.js'
import { scriptCalls, startPrivateRedis, startRedis, uniquePrefix } from '../../helpers/redis.js'

const limit = (text: string): RateLimit => parseRateLimit(text) as RateLimit

t.test('the script answers as the window arithmetic does', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const script = new RateLimitScript(client)
  const prefix = uniquePrefix()

  const buckets = [
    { name: `${prefix}ratelimit:key:k1:1000`, limit: limit('7/1s') },
    { name: `${prefix}ratelimit:role:r:k1:10000`, limit: limit('30/10s') },
    { name: `${prefix}ratelimit:org:o:60000`, limit: limit('100/1m') }
  ]
  const models: Counts[] = buckets.map(() => new Map())
  let seed = 7
  const rnd = (): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 }
  let now = 1_700_000_000_000
  let mismatches = 0
  let allowed = 0
  for (let i = 0; i < 3000; i++) {
    const r = rnd()
    now += r < 0.4 ? 0 : r < 0.97 ? Math.floor(rnd() * 150) : Math.floor(rnd() * 20_000)
    // the model: all or nothing, like the script
    const looks = buckets.map((b, j) => take(models[j] as Counts, b.limit, now, false))
    const ok = looks.every((l) => l.allowed)
    const expected = ok ? buckets.map((b, j) => take(models[j] as Counts, b.limit, now, true)) : looks
    const got = await script.take(buckets, now)
    if (got.allowed !== ok || JSON.stringify(got.buckets) !== JSON.stringify(expected.map((e) => ({ used: e.used, resetMs: e.resetMs })))) {
      if (mismatches++ < 3) t.fail(`request ${i} at ${now}: script ${JSON.stringify(got)}, model ${ok} ${JSON.stringify(expected)}`)
    }
    if (got.allowed) allowed++
  }
  t.equal(mismatches, 0, `3000 requests, ${allowed} allowed: the script and the model agree on every one`)
  const held = Object.keys(await client.hgetall(buckets[0]?.name as string))
  t.ok(held.filter((f) => !f.startsWith('t')).length <= 11, `a bucket holds at most 11 counters (${held.length} fields)`)
  t.same(held.filter((f) => f.startsWith('t')).sort(), held.filter((f) => !f.startsWith('t')).map((f) => `t${f}`).sort(), 'each with its latest time')
  const ttl = await client.pttl(buckets[2]?.name as string)
  t.ok(ttl > 0 && ttl <= 66_000, `a bucket expires one period and one slot after its last request (${ttl} ms)`)
})

t.test("Redis's own clock when none is given", async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const script = new RateLimitScript(client)
  const name = `${uniquePrefix()}ratelimit:key:k:1000`
  const one = limit('2/1s')
  const results = [await script.take([{ name, limit: one }]), await script.take([{ name, limit: one }]), await script.take([{ name, limit: one }])]
  t.same(results.map((r) => r.allowed), [true, true, false])
  t.same(results.map((r) => r.buckets[0]?.used), [1, 2, 2], 'the refused request is not counted')
  const reset = results[2]?.buckets[0]?.resetMs as number
  t.ok(reset >= 1 && reset <= 1000, `refused until the second request leaves the window, within the period: ${reset} ms`)
})

t.test('the requests of one turn share one script call, each counted as if alone', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const script = new RateLimitScript(client)
  const prefix = uniquePrefix()
  const shared = { name: `${prefix}ratelimit:org:o:60000`, limit: limit('50/1m') }
  const own = (i: number): { name: string, limit: RateLimit } => ({ name: `${prefix}ratelimit:key:k${i % 7}:60000`, limit: limit('1000/1m') })
  // a bucket Redis cannot read (a string, not a hash): its request fails alone
  const broken = `${prefix}ratelimit:key:broken:60000`
  await client.set(broken, 'x')
  await script.take([{ name: `${prefix}warm`, limit: limit('1/1s') }]) // the script loaded
  const before = await scriptCalls(client)

  const asks = Array.from({ length: 200 }, async (_, i) => await script.take([own(i), shared]))
  const failing = script.take([{ name: broken, limit: limit('5/1m') }, shared])
  const results = await Promise.all(asks)
  await t.rejects(failing, /WRONGTYPE/, 'a request whose bucket Redis cannot read fails, alone')
  const calls = await scriptCalls(client) - before

  t.equal(results.filter((r) => r.allowed).length, 50, 'exactly the shared limit of 50 allowed out of 200')
  t.same(
    results.filter((r) => r.allowed).map((r) => r.buckets[1]?.used).sort((a, b) => (a ?? 0) - (b ?? 0)),
    Array.from({ length: 50 }, (_, i) => i + 1),
    'each allowed request saw its own count, 1 to 50'
  )
  t.ok(results.filter((r) => !r.allowed).every((r) => r.buckets[1]?.used === 50), 'each refused one saw the full 50')
  let counted = 0
  for (let i = 0; i < 7; i++) {
    for (const [f, v] of Object.entries(await client.hgetall(own(i).name))) if (!f.startsWith('t')) counted += Number(v)
  }
  t.equal(counted, 50, 'the refused requests counted in no bucket: the keys\' buckets hold the 50 allowed')
  t.ok(calls >= 1 && calls <= 10, `201 requests of one turn in ${calls} script calls (at most 128 each, the first sent alone)`)
})
