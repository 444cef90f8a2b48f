/**
 * Redis Sentinel (issue 4, topologies): a gateway given
 * `redis+sentinel://<sentinels>/<master-name>` finds the master through the
 * sentinels, and follows it when it fails over.
 *
 * Real processes: a master, a replica and three sentinels (quorum 2, down after
 * 1 s). The registry is written through the CLI's own client (createRedis with the
 * same config, queueing while it connects) and the admin actions. Then the master is
 * SIGKILLed:
 * - while the sentinels fail over, every answer is 200 or 503 (fail closed), never
 *   a 500 nor a 401 for a key that exists; /readyz answers 200 or 503;
 * - afterwards the gateway is connected to the new master: a key created after the
 *   failover, through a fresh Sentinel client, resolves with 200, keys created
 *   before it still do, /readyz is ready again, without a restart, push
 *   invalidation is re-established, and a direct revoke is honoured.
 */
import t from 'tap'
import { Fixtures } from '../../helpers/fixtures.js'
import { eventually, startGateway } from '../../helpers/gateway.js'
import { asTestRedis } from '../../helpers/redis-node.js'
import { uniquePrefix } from '../../helpers/redis.js'
import { startSentinelSetup, withClient } from '../../helpers/redis-sentinel.js'
import { cliClient, redisSection } from '../../helpers/topology.js'

async function clientNames (port: number): Promise<string> {
  return await withClient(port, async (c) => String(await c.call('CLIENT', 'LIST')))
}

t.test('through a Sentinel failover the gateway follows the new master, failing closed meanwhile', async (t) => {
  const sentinel = await startSentinelSetup(t)
  const prefix = uniquePrefix()
  const gw = await startGateway(t, {
    redis: asTestRedis(sentinel.master), // (the helper's own plain client; unused here)
    prefix,
    seed: false,
    configure: (c) => { c.redis = redisSection(sentinel.url, prefix) }
  })
  t.equal(gw.config.redis.url, sentinel.url, 'the gateway was given the redis+sentinel:// URL')

  const before = new Fixtures(cliClient(t, gw), gw.prefix, gw.config.keys.prefix)
  await before.standardWorld()
  const used = await before.personalKey('alice')
  const bot = await before.botKey('orgreader', 'acme')
  const unused = await Promise.all(Array.from({ length: 30 }, async () => await before.personalKey('alice')))
  // everything written so far is on the replica before the master dies (WAIT counts
  // acknowledgements of this connection's own writes, so it writes a marker first:
  // once the replica has it, it has every write before it in the stream)
  t.equal(await withClient(sentinel.master.port, async (c) => {
    await c.set(`${gw.prefix}replicated-marker`, '1')
    return await c.call('WAIT', '1', '5000')
  }), 1, 'the replica acknowledged the writes')

  t.equal((await gw.get('/api/v1/users', used.key)).status, 200, 'a personal key resolves through Sentinel')
  t.equal((await gw.get('/api/v1/orgs/acme/x', bot.key)).status, 200, 'a BOT key resolves through Sentinel')
  t.equal((await gw.get('/api/v1/users', bot.key)).status, 403, 'and is refused where its role does not reach')
  t.equal((await gw.admin('GET', '/readyz')).status, 200, '/readyz is ready')
  t.match(await clientNames(sentinel.master.port), /name=keygate /, 'the gateway is connected to the first master')

  const oldMaster = { host: '127.0.0.1', port: sentinel.master.port }
  sentinel.master.kill('SIGKILL')

  const statuses = new Map<number, number>()
  const readyz = new Map<number, number>()
  const count = (m: Map<number, number>, s: number): void => { m.set(s, (m.get(s) ?? 0) + 1) }
  let next = 0
  const probe = async (): Promise<void> => {
    const fresh = unused[next++ % unused.length] as { key: string }
    for (const key of [used.key, fresh.key]) count(statuses, (await gw.get('/api/v1/users', key)).status)
    count(readyz, (await gw.admin('GET', '/readyz')).status)
  }

  // during the failover
  const failover = { done: false } // (set when the promise below settles)
  const newMasterP = sentinel.waitForNewMaster(oldMaster).finally(() => { failover.done = true })
  while (!failover.done) {
    await probe()
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  const newMaster = await newMasterP
  t.equal(newMaster.port, sentinel.replica.port, 'the sentinels promoted the replica')

  // after it: a key created through a fresh Sentinel client (which finds the new master itself)
  const after = new Fixtures(cliClient(t, gw), gw.prefix, gw.config.keys.prefix)
  const created = await after.personalKey('alice')
  const waited = await eventually(async () => {
    await probe()
    return (await gw.get('/api/v1/users', created.key)).status === 200
  }, 30_000, 100)
  t.not(waited, -1, `a key created after the failover resolves with 200 (after ${waited} ms)`)
  t.not(await eventually(async () => (await gw.admin('GET', '/readyz')).status === 200, 15_000, 100), -1, '/readyz is ready again, without a restart')
  t.match(await clientNames(newMaster.port), /name=keygate /, 'the gateway is connected to the new master')

  for (const k of unused.slice(0, 5)) t.equal((await gw.get('/api/v1/users', k.key)).status, 200, 'a key created before the failover still resolves')
  t.equal((await gw.get('/api/v1/orgs/acme/x', bot.key)).status, 200, 'so does the BOT key')
  t.not(await eventually(async () => gw.app.tracking.up, 15_000, 100), -1, 'push invalidation is re-established on the new master')
  await after.hset(`${prefix}key:${used.id}`, 'status', 'revoked')
  t.not(await eventually(async () => (await gw.get('/api/v1/users', used.key)).status === 401, 5000), -1, 'a direct revoke on the new master is honoured')

  t.ok(statuses.size > 0 && readyz.size > 0, `the data plane and /readyz were probed through the failover (${[...statuses].map(([s, n]) => `${s}x${n}`).join(' ')}; readyz ${[...readyz].map(([s, n]) => `${s}x${n}`).join(' ')})`)
  t.same([...statuses.keys()].filter((s) => s !== 200 && s !== 503), [], 'every answer during the failover was 200 or 503: never a 500, never a 401 for a key that exists')
  t.same([...readyz.keys()].filter((s) => s !== 200 && s !== 503), [], '/readyz answered 200 or 503 throughout')
  t.notOk(gw.logs.some((l) => l.status === 500 || l.reason === 'internal_error'), 'no internal error was logged')
})
