/**
 * Issue 19: the cold path. A pass over 5,000 keys the gateway has never seen, many
 * requests in flight at once (so their reads go out together, one script per turn of
 * the event loop), costs at most one registry read (EVALSHA, counted by a real Redis
 * in INFO commandstats) per cache miss, fewer when misses share a script, and every
 * decision is the one the records call for: valid keys allowed, a revoked key, a key whose user is
 * deactivated and a key of the wrong Redis type refused, a key without the
 * permission forbidden, each among the valid ones in the same batches. Batching keeps
 * failures apart and closed: a record of the wrong type refuses only its key, and a
 * hung Redis answers every read of a burst with 503 in time, nothing reaching the
 * upstream.
 */
import t from 'tap'
import { Pool } from 'undici'
import { generateKey, type NewKey } from '../../../src/registry/key-format.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { scriptCalls, startPrivateRedis } from '../../helpers/redis.js'

const KEYS = 5000
const CONNECTIONS = 50

function record (key: NewKey, fields: Record<string, string>): Record<string, string> {
  return { hash: key.hash, org: 'acme', name: 'cold', status: 'active', created_at: '2026-01-01T00:00:00Z', created_by: 'cli:test', ...fields }
}

interface Case { key: NewKey, expected: number }

/** Writes the keys' records with pipelined HSETs (the standard world's users and roles). */
async function seed (gw: TestGateway): Promise<Case[]> {
  const k = gw.fixtures.keys
  await gw.fixtures.user('dave', 'acme', 'reader')
  await gw.client.hset(k.user('dave'), 'status', 'deactivated')
  const cases: Case[] = []
  let batch = gw.client.pipeline()
  for (let i = 0; i < KEYS; i++) {
    const key = generateKey(gw.config.keys.prefix)
    let fields: Record<string, string> = { type: 'personal', user: i % 2 === 0 ? 'alice' : 'bob' }
    let expected = 200
    if (i % 7 === 3) fields = { type: 'bot', role: 'reader' }
    if (i === 1000) [fields, expected] = [{ type: 'personal', user: 'alice', status: 'revoked' }, 401]
    if (i === 2000) [fields, expected] = [{ type: 'personal', user: 'carol', org: 'globex' }, 403]
    if (i === 3000) [fields, expected] = [{ type: 'personal', user: 'dave' }, 401]
    if (i === 4000) [fields, expected] = [{ type: 'bot', role: 'reader', expires_at: '2020-01-01T00:00:00Z' }, 401]
    if (i === 4500) {
      batch.set(k.key(key.id), 'not a hash')
      expected = 401
    } else {
      batch.hset(k.key(key.id), record(key, fields))
    }
    cases.push({ key, expected })
    if (batch.length >= 1000) {
      await batch.exec()
      batch = gw.client.pipeline()
    }
  }
  await batch.exec()
  return cases
}

/** Sends every case once, CONNECTIONS at a time; the statuses in order. */
async function pass (gw: TestGateway, cases: Case[]): Promise<number[]> {
  const pool = new Pool(`http://127.0.0.1:${gw.port}`, { connections: CONNECTIONS })
  try {
    const statuses: number[] = new Array<number>(cases.length)
    let next = 0
    await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
      while (next < cases.length) {
        const i = next++
        const res = await pool.request({ method: 'GET', path: '/api/v1/users', headers: { authorization: `Bearer ${(cases[i] as Case).key.key}` } })
        await res.body.dump()
        statuses[i] = res.statusCode
      }
    }))
    return statuses
  } finally {
    await pool.close()
  }
}

t.test(`a cold pass over ${KEYS.toLocaleString('en')} keys: one EVALSHA per miss, every decision right`, async (t) => {
  // a Redis of the test's own: its command counts are this gateway's alone
  const redis = await startPrivateRedis()
  t.teardown(async () => { await redis.stop() })
  // (usage counting and the request log off: their writes are script calls too, and this counts the registry's reads;
  // TTLs of a minute: a pass may take tens of seconds on a busy machine, and the second pass
  // counts reads of what the first cached, not of what expired meanwhile)
  const gw = await startGateway(t, {
    redis,
    yaml: 'log: { level: warn }\nusage: { enabled: false }\nrequest_log: { enabled: false }\n' +
      'cache: { ttl_ms: 60000, negative_ttl_ms: 60000 }\n'
  })
  const cases = await seed(gw)

  const readsBefore = await scriptCalls(gw.client)
  const missesBefore = gw.app.cache.counters.misses
  const statuses = await pass(gw, cases)
  const reads = await scriptCalls(gw.client) - readsBefore
  const misses = gw.app.cache.counters.misses - missesBefore

  const wrong = cases.flatMap((c, i) => statuses[i] === c.expected ? [] : [`#${i}: ${statuses[i] ?? '?'}, expected ${c.expected}`])
  t.same(wrong, [], 'every key got the decision its records call for')
  t.equal(statuses.filter((s) => s === 200).length, KEYS - 5, 'the valid keys were allowed')
  t.equal(misses, KEYS, 'every request was a miss')
  t.ok(reads <= misses, `at most one registry read per miss (${reads} for ${misses})`)
  t.ok(reads < misses, 'misses in flight together share a read')
  t.equal(gw.upstream.requests.length, KEYS - 5, 'only the allowed requests reached the upstream')

  // a second pass: every record now comes from the cache, but the wrong-type key's
  // (an error reply is never cached)
  const again = await pass(gw, cases)
  t.same(again, statuses, 'the same decisions from the cache')
  t.equal(await scriptCalls(gw.client) - readsBefore - reads, 1, 'one registry read in the second pass: the wrong-type key')
})

t.test('a burst of misses while Redis hangs: every one 503 within the command timeout, none upstream', async (t) => {
  const gw = await startGateway(t, { redis: await startPrivateRedis(), yaml: 'log: { level: warn }\n', configure: (c) => { c.redis.command_timeout_ms = 300 } })
  t.teardown(async () => { await gw.redis.stop() })
  const keys = await Promise.all(Array.from({ length: 40 }, async () => await gw.fixtures.personalKey('alice')))
  const control = await gw.fixtures.personalKey('alice')
  t.equal((await gw.get('/api/v1/users', control.key)).status, 200, 'control: Redis up, a key works')

  gw.redis.kill('SIGSTOP')
  const start = Date.now()
  const burst = await Promise.all(keys.map(async (k) => (await gw.get('/api/v1/users', k.key)).status))
  const ms = Date.now() - start
  gw.redis.kill('SIGCONT')
  t.same([...new Set(burst)], [503], 'every never-seen key of the burst: 503')
  t.ok(ms < 1500, `the burst was answered in ${ms} ms (command timeout 300 ms)`)
  t.equal(gw.upstream.requests.length, 1, 'nothing but the control request reached the upstream')
})
