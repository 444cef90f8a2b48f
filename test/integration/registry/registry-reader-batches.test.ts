/**
 * The registry reads of one event-loop turn share script calls of at most 128 keys
 * each: a turn of 300 misses is three calls, and each read still gets its own answer
 * (a found key its chain, an absent key none, a record of the wrong type its own error).
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { RegistryReader } from '../../../src/registry/registry-reader.js'
import { redisKeys } from '../../../src/registry/redis-keys.js'
import { scriptCalls, startPrivateRedis, uniquePrefix } from '../../helpers/redis.js'

const READS = 300

t.test('300 reads in one turn: three script calls, each read its own answer', async (t) => {
  const server = await startPrivateRedis()
  t.teardown(async () => { await server.stop() })
  const client = new Redis(server.url)
  t.teardown(() => { client.disconnect() })
  const prefix = uniquePrefix()
  const k = redisKeys(prefix)
  await client.hset(k.role('reader'), { permissions: 'users:read' })
  await client.hset(k.user('alice'), { org: 'acme', role: 'reader', status: 'active' })
  // every third key exists, key151 is a string (the wrong type), the rest are absent
  for (let i = 0; i < READS; i += 3) await client.hset(k.key(`key${i}`), { type: 'personal', hash: 'ab'.repeat(32), org: 'acme', status: 'active', user: 'alice' })
  await client.set(k.key('key151'), 'not a hash')

  const reader = new RegistryReader(client, k, prefix)
  // (the scripts are loaded on first use: one read first, so the count below is of EVALSHAs only)
  await reader.fetchChain('warm')
  const before = await scriptCalls(client)
  const results = await Promise.allSettled(Array.from({ length: READS }, async (_, i) => await reader.fetchChain(`key${i}`)))
  t.equal(await scriptCalls(client) - before, Math.ceil(READS / 128), 'one script call per 128 reads of the turn')

  for (const [i, r] of results.entries()) {
    if (i === 151) {
      t.equal(r.status, 'rejected', 'the record of the wrong type fails its own read')
      continue
    }
    if (r.status !== 'fulfilled') {
      t.fail(`read ${i} failed: ${String(r.reason)}`)
      continue
    }
    if (i % 3 === 0) {
      if (r.value.key === null || r.value.user === undefined) t.fail(`key${i}: its chain`)
      else t.equal(r.value.roleName, 'reader')
    } else if (r.value.key !== null) t.fail(`key${i}: absent, yet a record`)
  }
  t.equal(results.filter((r) => r.status === 'rejected').length, 1, 'no other read failed')
})
