/**
 * A Sentinel-managed connection keeps reconnecting through a failover even when a
 * sentinel announces the new master while the connection is still asking a sentinel
 * where the master is (docs/topologies.md, failover detection).
 *
 * ioredis's failover detector (subscribed to `+switch-master` on every sentinel for
 * as long as its connection lives) ends the client's connector when the message
 * arrives; if that lands while a reconnect is waiting on a sentinel's answer, the
 * reconnect is abandoned and the client gives up for good (status `end`): a gateway
 * answering 503 until restarted. Here the race is made certain instead of rare: the
 * sentinel a reconnect asks first is stopped (SIGSTOP: its socket accepts, it never
 * answers), the master is killed, the other two sentinels fail over and announce it,
 * and only then is the stopped sentinel let go. Real processes throughout.
 */
import t from 'tap'
import type { Redis } from 'ioredis'
import { createRedis, duplicateClient } from '../../../src/registry/redis-client.js'
import { startSentinelSetup, withClient, type HostPort } from '../../helpers/redis-sentinel.js'
import { until } from '../../helpers/wait.js'

t.setTimeout(120_000)

t.test('a failover announced while a reconnect waits on a sentinel does not end the client', async (t) => {
  const sentinel = await startSentinelSetup(t)
  const [first, ...others] = sentinel.sentinels
  if (first === undefined) throw new Error('no sentinels')
  // The sentinel command waits longer than the failover takes, so the reconnect that
  // asks the stopped sentinel is still waiting when the others announce the new master.
  const cfg = { url: sentinel.url, prefix: 'race:', command_timeout_ms: 20_000, connect_timeout_ms: 1_000 }
  const main = createRedis(cfg) as Redis
  const dup = duplicateClient(main, { connectionName: 'keygate-dup' }) as Redis
  const clients = { main, duplicate: dup }
  const ended: string[] = []
  for (const [name, c] of Object.entries(clients)) {
    c.on('error', () => {})
    c.on('end', () => { ended.push(name) })
  }
  t.teardown(() => { main.disconnect(); dup.disconnect() })

  await until(() => main.status === 'ready' && dup.status === 'ready', 10_000, 'both clients to be ready')
  // each client's detector is subscribed on every sentinel (the first included)
  await until(async () => (await switchMasterSubscribers(sentinel.sentinels.map((s) => s.port))).every((n) => n >= 2),
    10_000, 'both failover detectors to subscribe on every sentinel')

  const old: HostPort = { host: '127.0.0.1', port: sentinel.master.port }
  first.kill('SIGSTOP')
  sentinel.master.kill('SIGKILL')
  await until(() => main.status !== 'ready' && dup.status !== 'ready', 5_000, 'both clients to lose the master')
  // The two running sentinels agree on a new master (they announce +switch-master as they switch).
  const promoted = await sentinel.waitForNewMaster(old, 30_000, others)
  await new Promise((resolve) => setTimeout(resolve, 1_000)) // the announcement reaches the detectors
  t.not(main.status, 'ready', 'the main client was still reconnecting when the failover was announced')
  first.kill('SIGCONT')

  await until(() => main.status === 'ready' && dup.status === 'ready', 30_000,
    `both clients to be ready again (main ${main.status}, duplicate ${dup.status})`).catch(() => {})
  t.same(ended, [], 'no client gave up (status end)')
  for (const [name, c] of Object.entries(clients)) {
    t.equal(c.status, 'ready', `the ${name} client is connected again`)
    t.equal(await c.ping().catch((err: Error) => err.message), 'PONG', `the ${name} client answers`)
    const role = await c.call('ROLE').catch(() => null) as unknown[] | null
    t.equal(role?.[0], 'master', `the ${name} client is on a master`)
    t.equal(c.stream?.remotePort, promoted.port, `the ${name} client is on the promoted replica (${promoted.port})`)
  }
})

async function switchMasterSubscribers (ports: number[]): Promise<number[]> {
  return await Promise.all(ports.map(async (port) => {
    // (a sentinel has no PUBSUB command: count its subscribed clients)
    const list = await withClient(port, async (c) => String(await c.call('CLIENT', 'LIST'))).catch(() => '')
    return list.split('\n').filter((line) => / sub=1 /.test(line)).length
  }))
}
