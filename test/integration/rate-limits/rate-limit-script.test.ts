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
import { commandCalls, scriptCalls, startPrivateRedis, startRedis, uniquePrefix } from '../../helpers/redis.js'

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

t.test('a call reads each bucket once and writes each that counted once; every ask as if alone', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const script = new RateLimitScript(client)
  const prefix = uniquePrefix()
  const shared = { name: `${prefix}ratelimit:org:o:60000`, limit: limit('6/1m') }
  const own = (i: number): { name: string, limit: RateLimit } => ({ name: `${prefix}ratelimit:key:k${i}:60000`, limit: limit('1000/1m') })
  // a key's own bucket already full: its request is refused, and counted in no bucket
  const full = { name: `${prefix}ratelimit:key:full:60000`, limit: limit('1/1m') }
  t.equal((await script.take([full])).allowed, true)
  // a slot written by an older keygate, without its time: it counts, as if its latest request came at the slot's end
  const [seconds] = await client.time()
  const slot = Math.floor(Number(seconds) * 1000 / 6000)
  await client.hset(shared.name, String(slot - 1), '2')
  const before = await commandCalls(client)

  // the first ask goes alone (nothing waits on Redis), the other 7 of the turn in one call
  const asks = Array.from({ length: 8 }, async (_, i) => await script.take(i === 3 ? [full, shared] : [own(i), shared]))
  const results = await Promise.all(asks)
  const after = await commandCalls(client)
  const delta = (name: string): number => (after[name] ?? 0) - (before[name] ?? 0)

  t.same(results.map((r) => r.allowed), [true, true, true, false, true, false, false, false],
    'in order: room for 4 beside the older keygate\'s 2; the full key\'s request refused on its own bucket')
  t.same(results.map((r) => r.buckets[1]?.used), [3, 4, 5, 5, 6, 6, 6, 6], 'each ask saw the counts of those before it')
  t.equal(delta('evalsha') + delta('eval'), 2, 'two calls: the first ask alone, then the turn\'s 7')
  t.equal(delta('hgetall'), 2 + 8, 'each call read each of its buckets once (1 + 1, then 6 own + full + shared)')
  t.equal(delta('hset'), 2 + 4, 'and wrote each bucket that counted once (2, then 3 own + shared)')
  const held = await client.hgetall(shared.name)
  const counts = Object.entries(held).filter(([f]) => !f.startsWith('t') && f !== String(slot - 1))
  t.equal(counts.reduce((sum, [, v]) => sum + Number(v), 0), 4, 'the shared bucket holds the 4 allowed, beside the older 2')
  t.ok(counts.every(([f]) => held[`t${f}`] !== undefined), 'each slot with its latest time')
  t.equal(held[String(slot - 1)], '2', 'the older keygate\'s slot kept while it counts')
  t.same(await client.hgetall(full.name).then((h) => Object.entries(h).filter(([f]) => !f.startsWith('t')).map(([, v]) => v)), ['1'],
    'the full bucket still holds its one request')
  const ttl = await client.pttl(shared.name)
  t.ok(ttl > 0 && ttl <= 66_000, `the bucket expires one period and one slot after its newest slot opened (${ttl} ms)`)
})
