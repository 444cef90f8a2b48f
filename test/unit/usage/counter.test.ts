// Which responses count in which class (and which count nowhere), and the counting map's
// bound: past `maxKeys` distinct keys the batch is written at once, and nothing is lost.
import t from 'tap'
import { Redis } from 'ioredis'
import { outcomeOf, UsageCounter } from '../../../src/usage/counter.js'
import { readUsage } from '../../../src/usage/reader.js'
import { redisKeys } from '../../../src/registry/redis-keys.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import type { Reason } from '../../../src/errors.js'

t.test('the class of each outcome', async (t) => {
  const cases: Array<[number, Reason | undefined, number, string]> = [
    [200, 'allowed', 0, 'allowed'],
    [500, 'allowed', 0, 'allowed, whatever the upstream answered'],
    [502, 'upstream_error', 3, 'upstream unreachable: an error keygate produced'],
    [504, 'upstream_timeout', 3, 'upstream timed out'],
    [503, 'registry_unavailable', 3, 'registry unavailable'],
    [401, 'key_revoked', 1, 'a revoked key: refused'],
    [401, 'secret_mismatch', -1, 'a wrong secret for a known id: not counted (anyone knowing the id could)'],
    [403, 'missing_permission', 1, 'forbidden'],
    [429, 'rate_limited', 2, 'limited'],
    [401, 'unknown_key', -1, 'a key that does not exist: not counted'],
    [401, 'bad_checksum', -1, 'bad checksum: not counted'],
    [401, 'malformed_credential', -1, 'malformed: not counted'],
    [429, 'unknown_key_limited', -1, 'unknown-key budget: not counted'],
    [413, 'body_too_large', -1, 'another 4xx: not counted'],
    [404, undefined, -1, 'no decision: not counted']
  ]
  for (const [status, reason, want, label] of cases) t.equal(outcomeOf(status, reason), want, label)
})

t.test('a write after an interval with nothing to write', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  const counter = new UsageCounter(client, keys, { flushMs: 5000, retentionMs: 86_400_000 })
  await counter.flush()
  const now = Date.now()
  counter.count('key0000000000001', 'acme', 200, 'allowed', now)
  await counter.flush()
  t.same((await readUsage(client, keys, { key: 'key0000000000001' }, { from: now, to: now + 1, step: '1m' })).map((p) => p.allowed), [1], 'written by the next flush')
  await counter.stop()
})

t.test('past maxKeys the batch is written early, and every count arrives', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  const counter = new UsageCounter(client, keys, { flushMs: 5000, retentionMs: 86_400_000, maxKeys: 10 })
  const now = Date.now()
  for (let i = 0; i < 25; i++) counter.count(`key${String(i).padStart(13, '0')}`, 'acme', 200, 'allowed', now)
  t.equal(counter.held, 15, 'the first full batch of 10 is being written, the second waits; 5 in the current batch')
  await counter.stop()
  t.equal(counter.held, 0, 'nothing held after the final write')
  const range = { from: now, to: now + 1, step: '1m' as const }
  const org = await readUsage(client, keys, { org: 'acme' }, range)
  t.same(org.map((p) => p.allowed), [25], 'every count written, in the org too')
  const one = await readUsage(client, keys, { key: 'key0000000000024' }, range)
  t.same(one.map((p) => p.allowed), [1])
  t.equal(counter.dropped, 0)
})

t.test('a write that fails: its keys and requests told to the meter, the error to onError', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  // a hash the script cannot HINCRBY: its call fails with WRONGTYPE
  const now = Date.now()
  const hour = Math.floor(now / 3_600_000)
  await client.set(keys.usageMinutes('key0000000000001', hour), 'not a hash')
  const told: string[] = []
  const errors: string[] = []
  const counter = new UsageCounter(client, keys, {
    flushMs: 5000,
    retentionMs: 86_400_000,
    onError: (e) => { errors.push((e as Error).message) },
    meter: {
      flushed: (ms, n, ok) => { told.push(`flushed ${n} ${ok ? 'ok' : 'failed'}`); t.ok(ms >= 0) },
      dropped: (requests, reason) => { told.push(`dropped ${requests} ${reason}`) },
      full: () => { told.push('full') }
    }
  })
  for (let i = 0; i < 3; i++) counter.count('key0000000000001', 'acme', 200, 'allowed', now)
  counter.count('key0000000000002', 'acme', 429, 'rate_limited', now)
  await counter.stop()
  t.same(told, ['flushed 2 failed', 'dropped 4 failed'], 'one failed write of 2 keys, 4 requests lost')
  t.equal(errors.length, 1)
  t.match(errors[0], /WRONGTYPE/)
  t.notMatch(errors[0], /key000000000000/, 'the error names no key id')
})

t.test('a run of failed writes is told once, its end once, and the next run again', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  const now = Date.now()
  const blocker = keys.usageMinutes('key0000000000001', Math.floor(now / 3_600_000))
  const events: string[] = []
  const counter = new UsageCounter(client, keys, {
    flushMs: 5000,
    retentionMs: 86_400_000,
    onError: () => { events.push('error') },
    onRecovered: () => { events.push('recovered') }
  })
  t.teardown(async () => { await counter.stop() })
  const flushOne = async (): Promise<void> => {
    counter.count('key0000000000001', 'acme', 200, 'allowed', now)
    await counter.flush()
  }
  await client.set(blocker, 'not a hash')
  for (let i = 0; i < 3; i++) await flushOne()
  t.same(events, ['error'], 'three failed writes: one error')
  await client.del(blocker)
  await flushOne()
  await flushOne()
  t.same(events, ['error', 'recovered'], 'the first write that works ends the run')
  await client.set(blocker, 'not a hash')
  await flushOne()
  await flushOne()
  t.same(events, ['error', 'recovered', 'error'], 'a new run is told again')
})

t.test('past twice maxKeys waiting for a slow write, the oldest waiting batch is dropped', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const errors: string[] = []
  const told: string[] = []
  const meter = {
    flushed: (_ms: number, keys: number, ok: boolean) => { told.push(`flushed ${keys} ${ok ? 'ok' : 'failed'}`) },
    dropped: (requests: number, reason: string) => { told.push(`dropped ${requests} ${reason}`) },
    full: () => { told.push('full') }
  }
  const counter = new UsageCounter(client, redisKeys(uniquePrefix()), { flushMs: 5000, retentionMs: 86_400_000, maxKeys: 10, onError: (e) => { errors.push((e as Error).message) }, meter })
  const now = Date.now()
  // (no turn of the event loop: the first batch's write cannot finish meanwhile)
  for (let i = 0; i < 45; i++) counter.count(`key${String(i).padStart(13, '0')}`, 'acme', 200, 'allowed', now)
  // (a second request of key 44: 2 requests in the current batch's last key)
  counter.count('key0000000000044', 'acme', 200, 'allowed', now)
  t.equal(counter.dropped, 10, 'one batch of 10 dropped')
  t.equal(counter.held, 25, 'two batches wait, 5 counted: memory bounded')
  t.same(errors, ['the counts of 10 keys were dropped: the writes fall behind'])
  t.same(told, ['full', 'full', 'full', 'dropped 10 behind', 'full'], 'the meter: four full batches, the fourth pushing one out, its 10 requests dropped')
  await counter.stop()
  // (the stop hands the current batch to the writer while the first write is still under
  // way: 25 keys wait, past twice maxKeys again, so the oldest waiting batch goes too)
  t.same(told.slice(5), ['dropped 10 behind', 'flushed 10 ok', 'flushed 15 ok'], 'then the first batch\'s write, and one of the 15 keys left')
})
