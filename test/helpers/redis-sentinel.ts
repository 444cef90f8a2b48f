/**
 * A Sentinel-managed Redis for tests, all real processes on free ports: one master,
 * one replica, three sentinels (`redis-server <conf> --sentinel`) with quorum 2 and
 * short timings (down after 1 s), so that killing the master fails over to the
 * replica in a few seconds. Torn down with the test (processes killed, directory
 * removed).
 */
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { Redis } from 'ioredis'
import { serverArgs, startRedisNode, tempDir, type RedisNode } from './redis-node.js'
import { until } from './wait.js'

export interface HostPort { host: string, port: number }

export interface SentinelSetup {
  masterName: string
  /** the master at the start (a failover makes the replica the master) */
  master: RedisNode
  replica: RedisNode
  sentinels: RedisNode[]
  /** redis+sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,127.0.0.1:<s3>/<masterName> */
  url: string
  /** waits until every sentinel (or those of `among`) names a master other than `old` (bounded); returns it */
  waitForNewMaster: (old: HostPort, ms?: number, among?: RedisNode[]) => Promise<HostPort>
}

export interface SentinelOptions {
  masterName?: string
  downAfterMs?: number
  failoverTimeoutMs?: number
}

export async function startSentinelSetup (t: Test, opts: SentinelOptions = {}): Promise<SentinelSetup> {
  const masterName = opts.masterName ?? 'kgmaster'
  const dir = tempDir('sentinel')
  const nodes: RedisNode[] = []
  t.teardown(async () => {
    await Promise.all(nodes.map(async (n) => { n.kill('SIGCONT'); await n.stop() }))
    rmSync(dir, { recursive: true, force: true })
  })
  const started = async (n: Promise<RedisNode>): Promise<RedisNode> => { const node = await n; nodes.push(node); return node }

  const master = await started(startRedisNode({ dir, argv: serverArgs() }))
  const replica = await started(startRedisNode({ dir, argv: serverArgs(['--replicaof', '127.0.0.1', String(master.port)]) }))
  await until(async () => /master_link_status:up/.test(await info(replica.port, 'replication')), 10_000, 'the replica to sync with the master')

  const sentinels: RedisNode[] = []
  for (let i = 0; i < 3; i++) {
    sentinels.push(await started(startRedisNode({
      dir,
      argv: (port, d) => {
        const conf = join(d, `sentinel-${port}.conf`)
        writeFileSync(conf, [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${d}`,
          `sentinel monitor ${masterName} 127.0.0.1 ${master.port} 2`,
          `sentinel down-after-milliseconds ${masterName} ${opts.downAfterMs ?? 1000}`,
          `sentinel failover-timeout ${masterName} ${opts.failoverTimeoutMs ?? 3000}`,
          `sentinel parallel-syncs ${masterName} 1`,
          ''
        ].join('\n'))
        return [conf, '--sentinel']
      }
    })))
  }
  // A failover needs a majority of sentinels that know each other and the replica.
  await until(async () => {
    for (const s of sentinels) {
      const m = await sentinelMaster(s.port, masterName)
      if (m === undefined || m['num-other-sentinels'] !== '2' || m['num-slaves'] !== '1' || m.flags !== 'master') return false
    }
    return true
  }, 20_000, 'the sentinels to discover each other and the replica')

  return {
    masterName,
    master,
    replica,
    sentinels,
    url: `redis+sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${masterName}`,
    async waitForNewMaster (old, ms = 30_000, among = sentinels) {
      let found: HostPort | undefined
      await until(async () => {
        const named = await Promise.all(among.map(async (s) => {
          const reply = await withClient(s.port, async (c) => await c.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', masterName)).catch(() => null)
          return Array.isArray(reply) ? `${String(reply[0])}:${String(reply[1])}` : ''
        }))
        const first = named[0] ?? ''
        if (first === '' || first === `${old.host}:${old.port}` || !named.every((n) => n === first)) return false
        const [host, port] = first.split(':')
        found = { host: host as string, port: Number(port) }
        return true
      }, ms, 'the sentinels to agree on a new master')
      return found as HostPort
    }
  }
}

/** A short-lived client to one process (no retries, bounded timeouts). */
export async function withClient<T> (port: number, fn: (c: Redis) => Promise<T>): Promise<T> {
  const c = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000, commandTimeout: 2000, enableReadyCheck: false })
  c.on('error', () => {})
  try {
    await c.connect()
    return await fn(c)
  } finally {
    c.disconnect()
  }
}

export async function info (port: number, section: string): Promise<string> {
  return await withClient(port, async (c) => await c.info(section)).catch(() => '')
}

async function sentinelMaster (port: number, name: string): Promise<Record<string, string> | undefined> {
  const reply = await withClient(port, async (c) => await c.call('SENTINEL', 'MASTER', name)).catch(() => null)
  if (!Array.isArray(reply)) return undefined
  const out: Record<string, string> = {}
  for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = String(reply[i + 1])
  return out
}
