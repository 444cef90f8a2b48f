/**
 * Redis Cluster (issue 4, topologies): a gateway given `redis+cluster://<seeds>` and
 * a hash-tagged prefix (`{kgtest-...}:`) keeps the whole registry in one slot, so the
 * gateway's one-round-trip Lua read and the CLI's MULTI/EXEC work unchanged.
 *
 * Rate limits too: the buckets of one request (key, role, org) are named under the
 * same prefix, so the limiter's one script never crosses slots.
 *
 * Real processes: three masters with a replica each, created with
 * `redis-cli --cluster create`. The registry is written through the CLI's own client
 * (createRedis: an ioredis Cluster) and the admin actions; direct edits are made with a
 * Cluster client, as `redis-cli -c` would make them.
 */
import t from 'tap'
import type { Test } from 'tap'
import { AdminError } from '../../../src/admin/model/errors.js'
import { isCluster } from '../../../src/registry/redis-client.js'
import { hashTag } from '../../../src/config/redis-url.js'
import { Fixtures } from '../../helpers/fixtures.js'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { startRedisCluster, type TestCluster } from '../../helpers/redis-cluster.js'
import { asTestRedis } from '../../helpers/redis-node.js'
import { uniquePrefix } from '../../helpers/redis.js'
import { withClient } from '../../helpers/redis-sentinel.js'
import { cliClient, redisSection } from '../../helpers/topology.js'

interface World {
  cluster: TestCluster
  gw: TestGateway
  fx: Fixtures
}

async function clusterGateway (t: Test, replicasPerMaster = 0): Promise<World> {
  const cluster = await startRedisCluster(t, { masters: 3, replicasPerMaster })
  const prefix = `{${uniquePrefix().slice(0, -1).replace(/:/g, '-')}}:`
  const [first] = cluster.nodes
  const gw = await startGateway(t, {
    redis: asTestRedis(first as NonNullable<typeof first>), // (the helper's own plain client; unused here)
    prefix,
    seed: false,
    configure: (c) => { c.redis = redisSection(cluster.url, prefix) }
  })
  const admin = cliClient(t, gw)
  const fx = new Fixtures(admin, prefix, gw.config.keys.prefix)
  await fx.standardWorld()
  return { cluster, gw, fx }
}

const eventually200 = async (gw: TestGateway, target: string, key: string, status: number): Promise<number> =>
  await eventually(async () => (await gw.get(target, key)).status === status, 5000)

t.test('on a Cluster, the registry lives in one slot and the data plane decides as on one Redis', async (t) => {
  const { cluster, gw, fx } = await clusterGateway(t)
  t.ok(isCluster(gw.app.redis), 'the gateway holds an ioredis Cluster')
  t.match(gw.prefix, /^\{kgtest-[0-9a-f]+\}:$/, 'the prefix carries a hash tag')

  const alice = await fx.personalKey('alice')
  const bob = await fx.personalKey('bob')
  const bot = await fx.botKey('orgreader', 'acme')

  const matrix: Array<[string, string, string | undefined, number]> = [
    ['personal key, permitted', '/api/v1/users', alice.key, 200],
    ['BOT key, its org', '/api/v1/orgs/acme/projects', bot.key, 200],
    ['BOT key, another org', '/api/v1/orgs/globex/projects', bot.key, 403],
    ['BOT key, a permission its role lacks', '/api/v1/users', bot.key, 403],
    ['no key', '/api/v1/users', undefined, 401],
    ['a well-formed key that was never created', '/api/v1/users', alice.key.replace(/.{6}$/, 'AAAAAA'), 401]
  ]
  for (const [what, target, key, status] of matrix) t.equal((await gw.get(target, key)).status, status, `${what}: ${status}`)
  t.equal((await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${bob.key}`, 'Content-Length': '0' })).status, 200, 'a writer may POST')
  t.equal((await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${alice.key}`, 'Content-Length': '0' })).status, 403, 'a reader may not')

  // hashTag() (what the config check relies on) reads a prefix as the server does
  const [node] = cluster.nodes
  for (const p of ['{keygate}:', 'app:{kg}:', 'keygate:', '{}keygate:', '{}{kg}:', '{kg:']) {
    const slots = await withClient((node as NonNullable<typeof node>).port, async (c) => await Promise.all(['key:a', 'user:b', 'role:c'].map(async (k) => await c.call('CLUSTER', 'KEYSLOT', p + k))))
    t.equal(new Set(slots).size === 1, hashTag(p) !== undefined, `prefix ${p}: ${hashTag(p) === undefined ? 'no tag, keys spread' : 'tagged, one slot'} (CLUSTER KEYSLOT agrees)`)
  }

  // Every registry key (records, indexes, audit, usage) hashes to the tag's slot: one master holds them all.
  const owner = await cluster.masterOf(`${gw.prefix}key:${alice.id}`)
  t.equal((await cluster.masterOf(`${gw.prefix}audit`)).port, owner.port, 'the audit stream is in the same slot as the records')
  await gw.app.usage.flush()
  for (const n of cluster.nodes) {
    const size = await withClient(n.port, async (c) => await c.dbsize())
    if (n.port === owner.port) t.ok(size > 10, `the slot's master holds the registry (${size} keys)`)
    else t.equal(size, 0, `another master (${n.port}) holds nothing`)
  }
})

t.test('on a Cluster, direct edits (redis-cli -c) are honoured and the admin transactions work', async (t) => {
  const { gw, fx } = await clusterGateway(t)
  const alice = await fx.personalKey('alice')
  const revokeMe = await fx.personalKey('alice')
  const direct = fx.redis
  for (const k of [alice, revokeMe]) t.equal((await gw.get('/api/v1/users', k.key)).status, 200, 'the key works')

  await direct.hset(`${gw.prefix}key:${revokeMe.id}`, 'status', 'revoked')
  t.not(await eventually200(gw, '/api/v1/users', revokeMe.key, 401), -1, 'HSET key status revoked: 401')
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 200, 'the user\'s other key still works')

  await direct.hset(`${gw.prefix}user:alice`, 'status', 'deactivated')
  t.not(await eventually200(gw, '/api/v1/users', alice.key, 401), -1, 'HSET user status deactivated: 401')
  await direct.hset(`${gw.prefix}user:alice`, 'status', 'active')
  t.not(await eventually200(gw, '/api/v1/users', alice.key, 200), -1, 'reactivated: 200 again')

  await direct.hset(`${gw.prefix}role:reader`, 'permissions', 'orgs:read')
  t.not(await eventually200(gw, '/api/v1/users', alice.key, 403), -1, 'HSET role permissions: the change applies (403)')
  await fx.role('reader', ['users:read'])

  // keys rotate: WATCH, then MULTI/EXEC, on the node of the registry's slot
  const rotated = await fx.admin.rotateKey(alice.id, 60_000)
  t.equal((await gw.get('/api/v1/users', rotated.key)).status, 200, 'the rotated key works')
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 200, 'the old key works during its grace period')

  // A refused rotation has WATCHed the revoked key; a later change to that key must not
  // abort the next transaction on that connection: its UNWATCH must reach the node that
  // holds the WATCH (a keyless UNWATCH goes to any of the three masters, so try a few times).
  for (let i = 0; i < 6; i++) {
    await t.rejects(fx.admin.rotateKey(revokeMe.id, 60_000), AdminError, 'rotating a revoked key is refused')
    await direct.hset(`${gw.prefix}key:${revokeMe.id}`, 'name', `touched ${i}`)
    const later = await fx.personalKey('alice')
    t.equal((await gw.get('/api/v1/users', later.key)).status, 200, 'a key created after a refused rotation is written and works')
  }
})

t.test('on a Cluster, rate limits: key, role and org buckets in the registry\'s slot, one script', async (t) => {
  const { cluster, gw, fx } = await clusterGateway(t)
  const direct = fx.redis
  const bot = await fx.botKey('orgreader', 'acme')
  const limitIs = async (limit: string): Promise<number> => await eventually(async () => (await gw.get('/api/v1/orgs/acme/x', bot.key)).headers['ratelimit-limit'] === limit, 3000)
  await direct.hset(`${gw.prefix}key:${bot.id}`, 'rate_limit', '40/1m')
  await direct.hset(`${gw.prefix}role:orgreader`, 'rate_limit', '50/1m')
  t.not(await limitIs('40'), -1, 'HSET (redis-cli -c) of the key and role limits applies')
  await direct.hset(`${gw.prefix}org:acme`, 'rate_limit', '3/1m')
  t.not(await limitIs('3'), -1, 'HSET of the org limit applies')
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) statuses.push((await gw.get('/api/v1/orgs/acme/x', bot.key)).status)
  t.same(statuses, [200, 200, 429, 429], 'the org limit (3/1m, one used by the check above) decides, on a Cluster')
  const owner = await cluster.masterOf(`${gw.prefix}key:${bot.id}`)
  const buckets = await withClient(owner.port, async (c) => (await c.keys(`${gw.prefix}ratelimit:*`)).sort())
  t.same(buckets.map((b) => b.slice(gw.prefix.length).replace(bot.id, '<id>')), ['ratelimit:key:<id>:60000', 'ratelimit:org:acme:60000', 'ratelimit:role:orgreader:<id>:60000'], "the three buckets, on the registry slot's master")
})

t.test('on a Cluster, when the registry slot\'s master dies its replica takes over and the gateway follows', async (t) => {
  const { cluster, gw, fx } = await clusterGateway(t, 1)
  const used = await fx.personalKey('alice')
  const unused = await Promise.all(Array.from({ length: 20 }, async () => await fx.personalKey('alice')))
  const owner = await cluster.masterOf(`${gw.prefix}key:${used.id}`)
  // WAIT counts acknowledgements of this connection's own writes (none, on a fresh
  // connection, so it would return at once): write a marker in the registry's slot
  // here, and once the replica has it, it has every write before it in the stream
  t.equal(await withClient(owner.port, async (c) => {
    await c.set(`${gw.prefix}replicated-marker`, '1')
    return await c.call('WAIT', '1', '5000')
  }), 1, 'the replica acknowledged the writes')
  t.equal((await gw.get('/api/v1/users', used.key)).status, 200, 'the key works')

  owner.kill('SIGKILL')
  const statuses = new Map<number, number>()
  let next = 0
  const probe = async (): Promise<void> => {
    const fresh = unused[next++ % unused.length] as { key: string }
    for (const key of [used.key, fresh.key]) {
      const s = (await gw.get('/api/v1/users', key)).status
      statuses.set(s, (statuses.get(s) ?? 0) + 1)
    }
  }
  const failover = { done: false } // (set when the promise below settles)
  const promotedP = cluster.waitForNewMaster(`${gw.prefix}key:${used.id}`, owner).finally(() => { failover.done = true })
  while (!failover.done) {
    await probe()
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const promoted = await promotedP
  t.ok(promoted.port !== owner.port && cluster.nodes.includes(promoted), `a replica now serves the registry's slot (${owner.port} -> ${promoted.port})`)

  const after = new Fixtures(cliClient(t, gw), gw.prefix, gw.config.keys.prefix)
  const created = await after.personalKey('alice')
  const waited = await eventually(async () => {
    await probe()
    return (await gw.get('/api/v1/users', created.key)).status === 200
  }, 30_000, 100)
  t.not(waited, -1, `a key created after the failover resolves with 200 (after ${waited} ms)`)
  t.not(await eventually(async () => (await gw.admin('GET', '/readyz')).status === 200, 15_000, 100), -1, '/readyz is ready')
  for (const k of unused.slice(0, 3)) t.equal((await gw.get('/api/v1/users', k.key)).status, 200, 'a key created before the failover resolves')
  t.not(await eventually(async () => gw.app.tracking.up, 15_000, 100), -1, 'push invalidation is re-established on the slot\'s new master')
  await after.hset(`${gw.prefix}key:${used.id}`, 'status', 'revoked')
  t.not(await eventually(async () => (await gw.get('/api/v1/users', used.key)).status === 401, 5000), -1, 'a direct revoke on the new master is honoured')
  t.same([...statuses.keys()].filter((s) => s !== 200 && s !== 503), [], `only 200 or 503 meanwhile (${[...statuses].map(([s, n]) => `${s}x${n}`).join(' ')})`)
  t.notOk(gw.logs.some((l) => l.status === 500), 'no 500 was logged')
})
