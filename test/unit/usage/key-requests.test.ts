// The request log per key's recorder (src/usage/key-requests.ts) on a real Redis: the last
// per_key decisions a key, newest first, trimmed and expiring, one script call a 500 keys; only keys
// presented whole; a path's query cut off and a key in it redacted; the buffer bounded
// (dropped and counted past max_buffered); and the memory of 100,000 active keys measured,
// in the process (the buffer at its cap) and in Redis (one list a key), reported.
import t from 'tap'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { Redis } from 'ioredis'
import { KeyRequests } from '../../../src/usage/key-requests.js'
import { readKeyRequests } from '../../../src/usage/key-requests-read.js'
import { redisKeys } from '../../../src/registry/redis-keys.js'
import { commandCalls, scriptCalls, startRedis, uniquePrefix } from '../../helpers/redis.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const TRACE = '0af7651916cd43dd8448eb211c80319c'

t.test('the last per_key decisions of each key, newest first, trimmed and expiring', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  const log = new KeyRequests(client, keys, { perKey: 3, maxBuffered: 100, flushMs: 60_000, keyPrefix: 'kg_' })
  t.teardown(async () => { await log.stop() })
  for (let i = 0; i < 5; i++) log.record('AAAAAAAAAAAAAAAA', 'allowed', 'GET', `/api/v1/users/${i}`, 200, i + 0.5, '10.0.0.1', TRACE, 1000 + i)
  log.record('AAAAAAAAAAAAAAAA', 'missing_permission', 'POST', '/api/v1/users?secret=1', 403, 1, '10.0.0.2', TRACE, 2000)
  log.record('AAAAAAAAAAAAAAAA', 'allowed', 'GET', '/api/v1/kg_BBBBBBBBBBBBBBBB_abcdefghijklmnopqrstuvwxyz012345XXXXXX', 200, 1, '', TRACE, 3000)
  // keys not presented whole: not recorded
  log.record('CCCCCCCCCCCCCCCC', 'secret_mismatch', 'GET', '/x', 401, 1, '10.0.0.3', TRACE, 4000)
  log.record('DDDDDDDDDDDDDDDD', 'unknown_key', 'GET', '/x', 401, 1, '10.0.0.3', TRACE, 4000)
  t.equal(log.held, 7)
  await log.flush()
  t.equal(log.held, 0)
  const list = await readKeyRequests(client, keys, 'AAAAAAAAAAAAAAAA', { limit: 10 })
  t.same(list.map((r) => [r.method, r.path, r.status, r.reason, r.client]), [
    ['GET', '/api/v1/kg_BBBBBBBBBBBBBBBB_[redacted]', 200, 'allowed', ''],
    ['POST', '/api/v1/users', 403, 'missing_permission', '10.0.0.2'],
    ['GET', '/api/v1/users/4', 200, 'allowed', '10.0.0.1']
  ], 'the last three, newest first: the query cut off, a key in the path as its id')
  t.equal(list[2]?.time, new Date(1004).toISOString())
  t.equal(list[2]?.latency_ms, 4.5)
  t.equal(list[2]?.trace_id, TRACE)
  t.equal(await client.llen(keys.keyRequests('AAAAAAAAAAAAAAAA')), 3, 'trimmed in Redis')
  const ttl = await client.ttl(keys.keyRequests('AAAAAAAAAAAAAAAA'))
  t.ok(ttl > 86_000 && ttl <= 86_400, 'expires 24 h after the write')
  t.equal(await client.exists(keys.keyRequests('CCCCCCCCCCCCCCCC'), keys.keyRequests('DDDDDDDDDDDDDDDD')), 0)
  t.same((await readKeyRequests(client, keys, 'AAAAAAAAAAAAAAAA', { limit: 10, status: '4xx' })).map((r) => r.status), [403])
  t.same(await readKeyRequests(client, keys, 'AAAAAAAAAAAAAAAA', { limit: 1 }).then((l) => l.length), 1)
})

t.test('a busy key: its ring keeps its last per_key decisions in order, every decision counted', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  const log = new KeyRequests(client, keys, { perKey: 5, maxBuffered: 1000, flushMs: 60_000, keyPrefix: 'kg_' })
  t.teardown(async () => { await log.stop() })
  for (let round = 0; round < 2; round++) {
    // 1,002 decisions: the ring wraps 200 times, the last two are past max_buffered
    for (let i = 0; i < 1002; i++) {
      log.record('EEEEEEEEEEEEEEEE', 'allowed', 'GET', `/r${round}/${i}`, 200, 1, '10.0.0.5', TRACE, 10_000 + i)
    }
    t.equal(log.held, 1000, 'every decision taken is held until the write')
    await log.flush()
    t.equal(log.written, 1000 * (round + 1))
    t.equal(log.dropped, 2 * (round + 1), 'past max_buffered: dropped and counted')
    const list = await readKeyRequests(client, keys, 'EEEEEEEEEEEEEEEE', { limit: 10 })
    t.same(list.map((r) => r.path), [999, 998, 997, 996, 995].map((i) => `/r${round}/${i}`),
      'the last five taken, newest first, trimmed to five in Redis')
    t.equal(list[0]?.time, new Date(10_999).toISOString())
  }
})

t.test('per_key 1: each key keeps its last decision', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  const log = new KeyRequests(client, keys, { perKey: 1, maxBuffered: 100, flushMs: 60_000, keyPrefix: 'kg_' })
  t.teardown(async () => { await log.stop() })
  for (let i = 0; i < 3; i++) {
    log.record('FFFFFFFFFFFFFFFF', 'allowed', 'GET', `/f/${i}`, 200, 1, '', TRACE, 1000 + i)
    log.record('GGGGGGGGGGGGGGGG', 'allowed', 'GET', '/g', 200, 1, '', TRACE, 1000 + i)
  }
  await log.flush()
  t.equal(log.written, 6)
  t.same((await readKeyRequests(client, keys, 'FFFFFFFFFFFFFFFF', { limit: 5 })).map((r) => r.path), ['/f/2'])
  t.same((await readKeyRequests(client, keys, 'GGGGGGGGGGGGGGGG', { limit: 5 })).map((r) => r.time),
    [new Date(1002).toISOString()])
})

t.test('bounded in memory and in Redis with 100,000 active keys (measured)', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const keys = redisKeys(uniquePrefix())
  const KEYS = 100_000
  const log = new KeyRequests(client, keys, { perKey: 100, maxBuffered: KEYS, flushMs: 60_000, keyPrefix: 'kg_' })
  t.teardown(async () => { await log.stop() })
  const ids = Array.from({ length: KEYS }, (_, i) => String(i).padStart(16, 'K'))
  gc()
  const heapBefore = process.memoryUsage().heapUsed
  for (let i = 0; i < KEYS; i++) {
    log.record(ids[i] as string, 'allowed', 'GET', `/api/v1/orgs/acme/items/${i}`, 200, 1.25, '192.168.10.20', TRACE, Date.now())
  }
  // past the cap: dropped and counted, never held
  for (let i = 0; i < 5000; i++) log.record(ids[i] as string, 'allowed', 'GET', '/x', 200, 1, '', TRACE, Date.now())
  gc()
  const heapHeld = process.memoryUsage().heapUsed - heapBefore
  t.equal(log.held, KEYS, 'the buffer holds max_buffered decisions')
  t.equal(log.dropped, 5000, 'the decisions past it are dropped and counted')
  const memoryBefore = Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1])
  await client.config('RESETSTAT')
  await log.flush()
  t.equal(log.written, KEYS)
  t.equal(await scriptCalls(client), KEYS / 500, 'one script call a 500 keys')
  const calls = await commandCalls(client)
  t.same([calls['lpush'], calls['ltrim'], calls['expire']], [KEYS, KEYS, KEYS], 'in it, three commands a key')
  t.equal(log.held, 0, 'nothing held once written')
  const memoryAfter = Number(/used_memory:(\d+)/.exec(await client.info('memory'))?.[1])
  t.equal(await client.dbsize(), KEYS, 'one list a key')
  const perKeyRedis = (memoryAfter - memoryBefore) / KEYS
  t.comment(`measured: ${KEYS} decisions of ${KEYS} keys held: ${(heapHeld / 1e6).toFixed(1)} MB of heap ` +
    `(${Math.round(heapHeld / KEYS)} bytes a decision); in Redis, one decision a key: ` +
    `${((memoryAfter - memoryBefore) / 1e6).toFixed(1)} MB (${Math.round(perKeyRedis)} bytes a key)`)
  t.ok(heapHeld < KEYS * 1024, 'under 1 KiB a held decision')
})
