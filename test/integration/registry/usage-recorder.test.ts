/**
 * last_used_at, as the gateway writes it: each key's use lands in the usage hash, a
 * key used again within the interval is not written again, and the fixed table of
 * recently noted keys never loses a use when far more keys are in use than it has
 * slots; a busy interval is written one HSET at a time, so building its commands never
 * holds the event loop for the whole batch. Real Redis.
 */
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { isoTimestamp } from '../../../src/registry/records.js'
import { UsageRecorder } from '../../../src/usage/last-used.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'

t.test('usage recorder', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const usageKey = uniquePrefix() + 'usage'
  // (flushed by hand: the timer is an hour)
  const usage = new UsageRecorder(client, usageKey, { everyMs: 60_000, flushMs: 3_600_000 })
  t.teardown(() => usage.stop())
  const t0 = Date.UTC(2026, 10, 22, 12, 0, 0)

  t.test('a use is written once per interval, with its second', async (t) => {
    usage.record('AAAAAAAAAAAAAAAA', t0 + 250)
    usage.record('AAAAAAAAAAAAAAAA', t0 + 900)
    await usage.flush()
    t.equal(await client.hget(usageKey, 'AAAAAAAAAAAAAAAA'), isoTimestamp(t0))
    await client.hdel(usageKey, 'AAAAAAAAAAAAAAAA')
    usage.record('AAAAAAAAAAAAAAAA', t0 + 59_000)
    await usage.flush()
    t.equal(await client.hget(usageKey, 'AAAAAAAAAAAAAAAA'), null, 'not written again within the interval')
    usage.record('AAAAAAAAAAAAAAAA', t0 + 60_000)
    await usage.flush()
    t.equal(await client.hget(usageKey, 'AAAAAAAAAAAAAAAA'), isoTimestamp(t0 + 60_000), 'written again once the interval has passed')
  })

  t.test('200,000 keys in use, three times the slots of the (smallest) table: every use lands', async (t) => {
    await client.del(usageKey)
    const ids = Array.from({ length: 200_000 }, (_, i) => `K${String(i).padStart(15, '0')}`)
    for (const id of ids) usage.record(id, t0 + 120_000)
    await usage.flush()
    t.equal(await client.hlen(usageKey), ids.length, 'one field per key')
    const sample = await client.hmget(usageKey, ids[0] as string, ids[99_999] as string, ids[199_999] as string)
    t.same(sample, Array(3).fill(isoTimestamp(t0 + 120_000)))
    // used again at once: each key is written again only where another key took its slot
    for (const id of ids) usage.record(id, t0 + 121_000)
    await usage.flush()
    const rewritten = (await client.hvals(usageKey)).filter((v) => v === isoTimestamp(t0 + 121_000)).length
    t.ok(rewritten < ids.length, `a key still in its slot is not written again (${rewritten} of ${ids.length} were)`)
    t.ok(rewritten > 0, 'keys that lost their slot are')
  })

  /** The real client, watched: how many HSETs are sent, of how many fields, and how many wait for Redis at once. */
  function watchHsets (t: Test): { calls: number, fieldCounts: number[], mostInFlight: number } {
    const hset = client.hset.bind(client)
    const seen = { calls: 0, fieldCounts: [] as number[], mostInFlight: 0 }
    let inFlight = 0
    client.hset = (async (key: string, fields: string[]) => {
      seen.calls++
      seen.fieldCounts.push(fields.length / 2)
      seen.mostInFlight = Math.max(seen.mostInFlight, ++inFlight)
      try {
        return await hset(key, fields)
      } finally {
        inFlight--
      }
    }) as typeof client.hset
    t.teardown(() => { client.hset = hset })
    return seen
  }

  t.test('4,500 keys: five HSETs of at most 1,000 fields, each sent when the one before was answered', async (t) => {
    await client.del(usageKey)
    const seen = watchHsets(t)
    const ids = Array.from({ length: 4_500 }, (_, i) => `B${String(i).padStart(15, '0')}`)
    for (const id of ids) usage.record(id, t0 + 180_000)
    await usage.flush()
    t.equal(seen.calls, 5, 'five HSETs')
    t.same(seen.fieldCounts, [1000, 1000, 1000, 1000, 500], 'of at most 1,000 fields each')
    t.equal(seen.mostInFlight, 1, 'one at a time')
    t.equal(await client.hlen(usageKey), ids.length, 'every use written')
  })

  t.test('a flush called while one writes waits for it, then writes what was noted meanwhile; stop() writes the rest', async (t) => {
    await client.del(usageKey)
    const other = new UsageRecorder(client, usageKey, { everyMs: 60_000, flushMs: 3_600_000 })
    const seen = watchHsets(t)
    const first = Array.from({ length: 2_500 }, (_, i) => `C${String(i).padStart(15, '0')}`)
    for (const id of first) other.record(id, t0 + 240_000)
    const writing = other.flush()
    other.record('DDDDDDDDDDDDDDDD', t0 + 240_000)
    const again = other.flush()
    await Promise.all([writing, again])
    t.same(seen.fieldCounts, [1000, 1000, 500, 1], 'the second flush wrote its one use after the first flush\'s three HSETs')
    t.equal(seen.mostInFlight, 1, 'never two writes at once')
    other.record('EEEEEEEEEEEEEEEE', t0 + 240_000)
    await other.stop()
    t.equal(await client.hget(usageKey, 'EEEEEEEEEEEEEEEE'), isoTimestamp(t0 + 240_000), 'stop() wrote it')
  })
})
