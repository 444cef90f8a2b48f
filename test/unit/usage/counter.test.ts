// Which responses count in which class (and which count nowhere), and the counting map's
// bound: past `maxKeys` distinct keys the batch is written at once, and nothing is lost.
import t, { type Test } from 'tap'
import { Redis } from 'ioredis'
import { outcomeOf, UsageCounter } from '../../../src/usage/counter.js'
import { readUsage } from '../../../src/usage/reader.js'
import { redisKeys } from '../../../src/registry/redis-keys.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import type { Reason } from '../../../src/errors.js'

/** A redis-server of the test's own, and a client of it, both stopped when `t` ends. */
async function redisFor (t: Test): Promise<Redis> {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  return client
}

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
  const client = await redisFor(t)
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
  const client = await redisFor(t)
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
  const client = await redisFor(t)
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
  const client = await redisFor(t)
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
  const client = await redisFor(t)
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

t.test('a flush writes 1,000 keys a pipelined write, each sent when the one before was answered', async (t) => {
  const client = await redisFor(t)
  const keys = redisKeys(uniquePrefix())
  // every pipeline the counter sends: its commands, and how many were awaiting Redis at once
  const sizes: number[] = []
  let inFlight = 0
  let mostInFlight = 0
  const pipeline = client.pipeline.bind(client)
  client.pipeline = ((...args: Parameters<typeof client.pipeline>) => {
    const line = pipeline(...args)
    const exec = line.exec.bind(line)
    line.exec = (async () => {
      sizes.push(line.length)
      mostInFlight = Math.max(mostInFlight, ++inFlight)
      try {
        return await exec()
      } finally {
        inFlight--
      }
    }) as typeof line.exec
    return line
  }) as typeof client.pipeline
  const counter = new UsageCounter(client, keys, { flushMs: 5000, retentionMs: 86_400_000 })
  const now = Date.now()
  const ids = Array.from({ length: 2_500 }, (_, i) => `key${String(i).padStart(13, '0')}`)
  for (const id of ids) counter.count(id, 'acme', 200, 'allowed', now)
  counter.count(ids[7] as string, 'acme', 403, 'missing_permission', now)
  await counter.flush()
  // (2,500 keys and their org: 2,501 entries; a script call holds 500)
  t.same(sizes, [2, 2, 2], 'three writes of two script calls: 1,000, 1,000 and 501 entries')
  t.equal(mostInFlight, 1, 'one write at a time')
  const range = { from: now, to: now + 1, step: '1m' as const }
  const org = await readUsage(client, keys, { org: 'acme' }, range)
  t.same(org.map((p) => [p.allowed, p.refused]), [[2_500, 1]], 'the org\'s counts, every request')
  for (const i of [0, 7, 999, 1_000, 2_499]) {
    const one = await readUsage(client, keys, { key: ids[i] as string }, range)
    t.same(one.map((p) => [p.allowed, p.refused]), [[1, i === 7 ? 1 : 0]], `key ${i} written`)
  }
  await counter.stop()
})

t.test('a write that fails after others worked: only the requests not written are told lost', async (t) => {
  const client = await redisFor(t)
  const keys = redisKeys(uniquePrefix())
  const now = Date.now()
  const ids = Array.from({ length: 1_500 }, (_, i) => `key${String(i).padStart(13, '0')}`)
  // (the second write's keys: its script call fails with WRONGTYPE)
  await client.set(keys.usageMinutes(ids[1_200] as string, Math.floor(now / 3_600_000)), 'not a hash')
  const told: string[] = []
  const counter = new UsageCounter(client, keys, {
    flushMs: 5000,
    retentionMs: 86_400_000,
    meter: {
      flushed: (_ms, n, ok) => { told.push(`flushed ${n} ${ok ? 'ok' : 'failed'}`) },
      dropped: (requests, reason) => { told.push(`dropped ${requests} ${reason}`) },
      full: () => { told.push('full') }
    }
  })
  for (const id of ids) counter.count(id, 'acme', 200, 'allowed', now)
  await counter.stop()
  t.same(told, ['flushed 1500 failed', 'dropped 500 failed'], 'the first write\'s 1,000 requests were written')
  const first = await readUsage(client, keys, { key: ids[999] as string }, { from: now, to: now + 1, step: '1m' })
  t.same(first.map((p) => p.allowed), [1], 'a key of the first write is in Redis')
})
