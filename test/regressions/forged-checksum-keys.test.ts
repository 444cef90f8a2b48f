// Forged-checksum keys reach Redis. The key's checksum is a CRC-32, which anyone can
// compute: `kg_<any id>_<any secret><crc>` passes every local check. A flood of such
// keys must cost Redis a number of commands bounded by the per-peer budget
// (limits.unknown_keys_per_peer), not by the flood; every forged key still gets the
// uniform 401; and a real key's cached records are never evicted by the negative
// entries the flood leaves (they have their own bound, cache.negative_max_entries).
import t from 'tap'
import { Redis } from 'ioredis'
import { Pool } from 'undici'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { startPrivateRedis } from '../helpers/redis.js'
import { watchGatewayRedis } from '../helpers/redis-monitor.js'
import { assembleKey } from '../../src/registry/key-format.js'

const BURST = 50
const PER_SECOND = 0.5 // slow, so that the budget visibly stays spent while a test acts
const FLOOD = 5000
const INVALID_TOKEN = 'Bearer realm="keygate", error="invalid_token"'
const UNAUTHORIZED_BODY = JSON.stringify({ error: { code: 'unauthorized', message: 'Invalid or missing authentication key', status: 401 } })

const redis = await startPrivateRedis() // INFO commandstats is server-wide: no other test's commands
t.teardown(() => redis.stop())
const gw = await startGateway(t, {
  redis,
  yaml: `
cache: { max_entries: 4, negative_max_entries: 100 }
usage: { enabled: false }
limits: { unknown_keys_per_peer: { per_second: ${PER_SECOND}, burst: ${BURST} } }
`
})

let forgedCount = 0
/** A well-formed key with a valid checksum that was never issued: a new id each call. */
function forgedKey (): string {
  const n = forgedCount++
  return assembleKey(gw.config.keys.prefix, ('F' + n.toString(36).padStart(15, '0')).slice(0, 16), 'S'.repeat(32))
}

/**
 * Calls of each command the Redis server has executed so far; `reads`: the key records
 * read, one HMGET each inside the registry's script (several keys' reads can share one
 * script call, and an unknown key has no user, role or org behind it to read).
 */
async function commandCalls (): Promise<{ reads: number, all: number }> {
  const info = await gw.client.info('commandstats')
  let reads = 0
  let all = 0
  for (const m of info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) {
    all += Number(m[2])
    if (m[1] === 'hmget') reads += Number(m[2])
  }
  return { reads, all }
}

interface Reply { status: number, challenge: string | undefined, body: string, requestId: string }

async function get (pool: Pool, key: string): Promise<Reply> {
  const res = await pool.request({ method: 'GET', path: '/api/v1/users', headers: { authorization: `Bearer ${key}` } })
  const body = await res.body.text()
  return { status: res.statusCode, challenge: res.headers['www-authenticate'] as string | undefined, body, requestId: res.headers['x-request-id'] as string }
}

/** The reason on a response's log line (written just after the response: polled). */
async function reasonOf (gateway: TestGateway, reply: Reply): Promise<string | undefined> {
  for (let i = 0; i < 100; i++) {
    const line = gateway.logs.findLast((l) => l.req_id === reply.requestId)
    if (line !== undefined) return line.reason
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  return undefined
}

t.test('a flood of forged keys from one peer: Redis bounded by the budget, real keys unharmed', async (t) => {
  const pool = new Pool(`http://127.0.0.1:${gw.port}`, { connections: 16, localAddress: '127.0.0.1' })
  t.teardown(() => pool.close())
  const real = await gw.fixtures.personalKey('alice')
  t.equal((await get(pool, real.key)).status, 200, 'the real key works, and is now cached')

  const before = await commandCalls()
  const startedAt = Date.now()
  let sent = 0
  const wrong: string[] = []
  const ids: string[] = []
  let realDuring = 0
  async function worker (): Promise<void> {
    while (sent < FLOOD) {
      const n = ++sent
      const reply = await get(pool, forgedKey())
      if (reply.status !== 401 || reply.challenge !== INVALID_TOKEN || reply.body !== UNAUTHORIZED_BODY) wrong.push(`${reply.status} ${reply.challenge ?? ''} ${reply.body}`)
      ids.push(reply.requestId)
      if (n % 250 === 0) {
        const r = await get(pool, real.key)
        if (r.status === 200) realDuring++
        else wrong.push(`real key during the flood: ${r.status}`)
      }
    }
  }
  await Promise.all(Array.from({ length: 16 }, worker))
  const elapsedS = (Date.now() - startedAt) / 1000
  const after = await commandCalls()
  await new Promise((resolve) => setTimeout(resolve, 200)) // the last log lines
  const reasonById = new Map(gw.logs.map((l) => [l.req_id, l.reason]))
  const reasons = new Map<string, number>()
  for (const id of ids) {
    const reason = reasonById.get(id) ?? 'none'
    reasons.set(reason, (reasons.get(reason) ?? 0) + 1)
  }

  t.same(wrong, [], `every forged key got the uniform 401 with the invalid_token challenge, and the real key kept working (${realDuring} checks)`)
  t.equal(realDuring, FLOOD / 250)
  const budget = BURST + Math.ceil(PER_SECOND * elapsedS) + 1
  const reads = after.reads - before.reads
  t.ok(reads <= budget, `registry reads ${reads} <= the budget ${budget} (burst ${BURST} + ${PER_SECOND}/s over ${elapsedS.toFixed(1)} s), not ${FLOOD}`)
  t.ok(reads >= BURST, `the burst was spent on real lookups (${reads} reads)`)
  // (besides the reads: the gateway's health and invalidation pings, and INFO itself)
  t.ok(after.all - before.all <= budget + 200, `every Redis command during the flood: ${after.all - before.all}`)
  t.ok((reasons.get('unknown_key_limited') ?? 0) >= FLOOD - budget, `refused without Redis, reason unknown_key_limited: ${reasons.get('unknown_key_limited') ?? 0}`)
  t.equal((reasons.get('unknown_key') ?? 0) + (reasons.get('unknown_key_limited') ?? 0), FLOOD, 'each forged key was unknown_key or unknown_key_limited')
  t.ok((reasons.get('unknown_key') ?? 0) <= reads, 'an unknown_key reason only after a registry read')

  const { result, commands } = await watchGatewayRedis(gw, async () => await get(pool, real.key))
  t.equal(result.status, 200, 'after the flood the real key still works')
  t.same(commands, [], 'served from the cache: the flood evicted none of its records (max_entries 4)')
  t.ok(gw.app.cache.negativeSize <= 100, 'negative entries stay within cache.negative_max_entries (limited lookups leave none)')

  t.equal((await get(pool, forgedKey())).status, 401, 'the peer is still limited')
})

t.test('another peer keeps its own budget', async (t) => {
  const pool = new Pool(`http://127.0.0.1:${gw.port}`, { connections: 1, localAddress: '127.0.0.2' })
  t.teardown(() => pool.close())
  const reply = await get(pool, forgedKey())
  t.equal(reply.status, 401)
  t.equal(await reasonOf(gw, reply), 'unknown_key', 'looked up in Redis, not limited')
  const real = await gw.fixtures.personalKey('bob')
  t.equal((await get(pool, real.key)).status, 200, 'an uncached real key works')
})

t.test('valid keys that miss do not spend the budget; a limited peer loses uncached lookups only', async (t) => {
  const pool = new Pool(`http://127.0.0.1:${gw.port}`, { connections: 4, localAddress: '127.0.0.3' })
  t.teardown(() => pool.close())
  const keys = []
  for (let i = 0; i < BURST + 20; i++) keys.push(await gw.fixtures.botKey('reader', 'acme'))
  for (const k of keys) {
    const reply = await get(pool, k.key)
    if (reply.status !== 200) t.fail(`valid key ${k.id}: ${reply.status} ${await reasonOf(gw, reply) ?? ''}`)
  }
  t.pass(`${keys.length} valid uncached keys (more than the burst) all passed`)
  const cachedKey = keys.at(-1)?.key as string // (max_entries 4: the latest key's records are the ones cached)

  // the whole burst is still there for unknown keys; then the peer is limited
  const fresh = await gw.fixtures.botKey('reader', 'acme')
  const forged: Reply[] = []
  for (let i = 0; i < BURST + 5; i++) forged.push(await get(pool, forgedKey()))
  const cached = await get(pool, cachedKey)
  const refused = await get(pool, fresh.key)
  const reasons: Array<string | undefined> = []
  for (const reply of forged) reasons.push(await reasonOf(gw, reply))
  t.same(reasons.slice(0, BURST).filter((r) => r !== 'unknown_key'), [], `the first ${BURST} forged keys were looked up`)
  t.ok(reasons.slice(BURST).filter((r) => r === 'unknown_key_limited').length >= 4, `then the peer is limited: ${reasons.slice(BURST).join(' ')}`)
  const limited = forged.at(-1)
  t.equal(limited?.status, 401)
  t.equal(limited?.challenge, INVALID_TOKEN)
  t.equal(limited?.body, UNAUTHORIZED_BODY, 'the same body as any unknown key')

  t.equal(cached.status, 200, 'a cached key of the limited peer keeps working')
  t.equal(refused.status, 401, 'an uncached real key from the limited peer waits for the budget to refill')
  t.equal(await reasonOf(gw, refused), 'unknown_key_limited')
})
t.test('a key created after a miss works once created, the negative entry notwithstanding', async (t) => {
  const pool = new Pool(`http://127.0.0.1:${gw.port}`, { connections: 1, localAddress: '127.0.0.4' })
  t.teardown(() => pool.close())
  const raw = new Redis(redis.url)
  t.teardown(() => { raw.disconnect() })
  const k = await gw.fixtures.personalKey('alice')
  const record = await raw.hgetall(gw.fixtures.keys.key(k.id))
  await raw.del(gw.fixtures.keys.key(k.id))
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal((await get(pool, k.key)).status, 401, 'unknown: now a negative entry')
  await raw.hset(gw.fixtures.keys.key(k.id), record)
  let status = 0
  for (let i = 0; i < 100 && status !== 200; i++) {
    status = (await get(pool, k.key)).status
    if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.equal(status, 200, 'the invalidation dropped the negative entry')
})

t.test('a limited peer keeps its known keys when their records are cached but no longer fresh', async (t) => {
  // no push invalidation: a record is fresh for ttl_ms, then refetched
  const ttl = await startGateway(t, {
    redis,
    yaml: `
cache: { tracking: false, ttl_ms: 50, negative_ttl_ms: 50 }
usage: { enabled: false }
limits: { unknown_keys_per_peer: { per_second: ${PER_SECOND}, burst: 5 } }
`
  })
  const pool = new Pool(`http://127.0.0.1:${ttl.port}`, { connections: 1, localAddress: '127.0.0.5' })
  t.teardown(() => pool.close())
  const real = await ttl.fixtures.personalKey('alice')
  const later = await ttl.fixtures.personalKey('bob')
  t.equal((await get(pool, real.key)).status, 200, 'the real key, now cached')
  const forged: Reply[] = []
  for (let i = 0; i < 10; i++) forged.push(await get(pool, assembleKey(ttl.config.keys.prefix, ('T' + i.toString(36).padStart(15, '0')), 'S'.repeat(32))))
  t.equal(await reasonOf(ttl, forged.at(-1) as Reply), 'unknown_key_limited', 'the peer has spent its budget')
  await new Promise((resolve) => setTimeout(resolve, 100)) // past ttl_ms: the record is held, not fresh
  t.equal((await get(pool, real.key)).status, 200, 'the known key is refetched, not limited')
  const refused = await get(pool, later.key)
  t.equal(refused.status, 401, 'a key the cache has never seen is limited')
  t.equal(await reasonOf(ttl, refused), 'unknown_key_limited')
})

t.test('a limited peer keeps its known keys when an invalidation drops their records', async (t) => {
  const pool = new Pool(`http://127.0.0.1:${gw.port}`, { connections: 1, localAddress: '127.0.0.6' })
  t.teardown(() => pool.close())
  const real = await gw.fixtures.personalKey('alice')
  t.equal((await get(pool, real.key)).status, 200, 'the real key, now cached')
  const forged: Reply[] = []
  for (let i = 0; i < BURST + 5; i++) forged.push(await get(pool, forgedKey()))
  t.equal(await reasonOf(gw, forged.at(-1) as Reply), 'unknown_key_limited', 'the peer has spent its budget')
  await gw.fixtures.hset(gw.fixtures.keys.key(real.id), 'name', 'renamed') // an edit: the record is invalidated
  let dropped = false
  for (let i = 0; i < 100 && !dropped; i++) {
    dropped = gw.app.cache.key(real.id) === undefined
    if (!dropped) await new Promise((resolve) => setTimeout(resolve, 10))
  }
  t.ok(dropped, 'the invalidation dropped the record')
  const reply = await get(pool, real.key)
  t.equal(reply.status, 200, 'the key is refetched, not limited')
  t.equal(await reasonOf(gw, reply), 'allowed')
})
