/**
 * A gateway's Redis connection never gives up unless keygate stops it
 * (src/registry/connection-guards.ts, `neverGivingUp`; docs/topologies.md).
 *
 * ioredis ends a client for good (status `end`, every command refused until a
 * restart) when an attempt to connect is abandoned while under way. Here that is
 * made certain on a real redis-server: the client's connection is killed
 * (CLIENT KILL), and the moment its reconnect starts, the connector is told to
 * disconnect (`disconnect(true)`, what a Sentinel failover detector does), so the
 * reconnect's connector rejects and ioredis ends the client. The gateway's clients
 * connect again; a client keygate stops, and one with a retry strategy of its own
 * (the invalidation tracker's), stay ended.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { createRedis, duplicateClient } from '../../../src/registry/redis-client.js'
import { startPrivateRedis } from '../../helpers/redis.js'
import { until } from '../../helpers/wait.js'

t.setTimeout(60_000)

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

t.test('a connection ended by an abandoned reconnect', async (t) => {
  const server = await startPrivateRedis()
  t.teardown(async () => { await server.stop() })
  const admin = new Redis(server.url)
  t.teardown(() => { admin.disconnect() })
  const cfg = { url: server.url, prefix: 'never:', command_timeout_ms: 1_000, connect_timeout_ms: 1_000 }

  /** The connections the server holds, the admin's own aside. */
  const others = async (): Promise<number> => (await admin.client('LIST') as string).trim().split('\n').length - 1

  /** Kills the client's connection and, when its reconnect starts, abandons it. Resolves once ioredis has ended it. */
  const abandonReconnect = async (c: Redis, stop: (c: Redis) => void): Promise<void> => {
    const id = await c.client('ID')
    c.once('connecting', () => { stop(c) })
    const ended = new Promise<void>((resolve) => { c.once('end', () => { resolve() }) })
    await admin.client('KILL', 'ID', String(id))
    await ended
  }

  t.test('the gateway client and its duplicate connect again', async (t) => {
    const main = createRedis(cfg) as Redis
    const dup = duplicateClient(main, { connectionName: 'keygate-dup' }) as Redis
    for (const c of [main, dup]) c.on('error', () => {})
    t.teardown(() => { main.disconnect(); dup.disconnect() })
    await until(() => main.status === 'ready' && dup.status === 'ready', 5_000, 'both clients ready')

    for (const [name, c] of [['main', main], ['duplicate', dup]] as const) {
      await abandonReconnect(c, (c) => { c.disconnect(true) })
      t.pass(`ioredis ended the ${name} client (the abandoned reconnect)`)
      await until(() => c.status === 'ready', 5_000, `the ${name} client to be ready again`).catch(() => {})
      t.equal(c.status, 'ready', `the ${name} client is connected again`)
      t.equal(await c.ping().catch((err: Error) => err.message), 'PONG', `the ${name} client answers`)
    }
  })

  t.test('a client keygate stops stays stopped', async (t) => {
    const c = createRedis(cfg) as Redis
    c.on('error', () => {})
    t.teardown(() => { c.disconnect() })
    await until(() => c.status === 'ready', 5_000, 'the client ready')
    await abandonReconnect(c, (c) => { c.disconnect() })
    await sleep(1_500) // longer than the longest reconnect delay (1 s)
    t.equal(c.status, 'end', 'the stopped client stays ended')
    t.equal(await others(), 0, 'and holds no connection')
  })

  t.test('a duplicate with a retry strategy of its own (the tracker\'s) stays ended', async (t) => {
    const main = createRedis(cfg) as Redis
    const own = duplicateClient(main, { connectionName: 'keygate-own', retryStrategy: () => null }) as Redis
    for (const c of [main, own]) c.on('error', () => {})
    t.teardown(() => { main.disconnect(); own.disconnect() })
    await until(() => main.status === 'ready' && own.status === 'ready', 5_000, 'both clients ready')
    await abandonReconnect(own, (c) => { c.disconnect(true) })
    await sleep(1_500)
    t.equal(own.status, 'end', 'it stays ended: its owner reopens it')
    t.equal(main.status, 'ready', 'beside a gateway client still connected')
    t.equal(await others(), 1, 'which holds the only connection')
  })
})
