/**
 * last_used_at, as the gateway writes it: each key's use lands in the usage hash, a
 * key used again within the interval is not written again, and the fixed table of
 * recently noted keys never loses a use when far more keys are in use than it has
 * slots. Real Redis.
 */
import t from 'tap'
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
})
