/**
 * A Redis Cluster for tests, all real processes on free ports: `masters` nodes (3 by
 * default), optionally replicas, created with `redis-cli --cluster create` (Debian's
 * redis-tools) and ready once every node reports `cluster_state:ok` and the same
 * slot map (and, with replicas, every replica has synced). Short node timeout (1 s), so a master's replica takes over quickly.
 * Torn down with the test (processes killed, directory removed).
 */
import { execFile } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { freePort } from './net.js'
import { serverArgs, startRedisNode, tempDir, type RedisNode } from './redis-node.js'
import { info, withClient } from './redis-sentinel.js'
import { until } from './wait.js'

export interface TestCluster {
  nodes: RedisNode[]
  /** redis+cluster://<every master node>, as seeds */
  url: string
  /** the node that currently serves `key`'s slot as master (asked of any live node) */
  masterOf: (key: string) => Promise<RedisNode>
  /** every live node reports cluster_state:ok and one slot map (bounded wait) */
  waitHealthy: (ms?: number) => Promise<void>
  /** waits until a master other than `old` serves `key`'s slot and the cluster is healthy again; returns it */
  waitForNewMaster: (key: string, old: RedisNode, ms?: number) => Promise<RedisNode>
}

export interface ClusterOptions {
  masters?: number
  replicasPerMaster?: number
  nodeTimeoutMs?: number
}

export async function startRedisCluster (t: Test, opts: ClusterOptions = {}): Promise<TestCluster> {
  const masters = opts.masters ?? 3
  const replicas = opts.replicasPerMaster ?? 0
  const dir = tempDir('cluster')
  const nodes: RedisNode[] = []
  t.teardown(async () => {
    await Promise.all(nodes.map(async (n) => { n.kill('SIGCONT'); await n.stop() }))
    rmSync(dir, { recursive: true, force: true })
  })
  const busPorts = new Map<number, number>()
  for (let i = 0; i < masters * (1 + replicas); i++) {
    nodes.push(await startRedisNode({
      dir,
      argv: async (port, d) => {
        // the cluster bus port is our own free port too (not port + 10000, which may be taken)
        const bus = busPorts.get(port) ?? await freePort()
        busPorts.set(port, bus)
        return serverArgs([
          '--cluster-enabled', 'yes',
          '--cluster-config-file', join(d, `nodes-${port}.conf`),
          '--cluster-port', String(bus),
          '--cluster-node-timeout', String(opts.nodeTimeoutMs ?? 1000),
          // a replica may always take over, however long its link has been down
          '--cluster-replica-validity-factor', '0'
        ])(port, d)
      }
    }))
  }

  await redisCli(['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'])

  const live = (): RedisNode[] => nodes.filter((n) => n.pid !== undefined)
  const cluster: TestCluster = {
    nodes,
    url: `redis+cluster://${nodes.slice(0, masters).map((n) => `127.0.0.1:${n.port}`).join(',')}`,
    async masterOf (key) {
      for (const n of live()) {
        const found = await withClient(n.port, async (c) => {
          const slot = Number(await c.call('CLUSTER', 'KEYSLOT', key))
          const ranges = await c.call('CLUSTER', 'SLOTS') as Array<[number, number, [string, number, ...unknown[]], ...unknown[]]>
          const range = ranges.find(([from, to]) => slot >= from && slot <= to)
          return nodes.find((x) => x.port === Number(range?.[2][1]))
        }).catch(() => undefined)
        if (found !== undefined) return found
      }
      throw new Error(`no live node could say which master serves ${key}`)
    },
    async waitHealthy (ms = 20_000) {
      await until(async () => {
        const maps = await Promise.all(live().map(async (n) => await withClient(n.port, async (c) => {
          const state = await c.call('CLUSTER', 'INFO') as string
          if (!/cluster_state:ok/.test(state) || !/cluster_slots_ok:16384/.test(state)) return ''
          const ranges = await c.call('CLUSTER', 'SLOTS') as Array<[number, number, [string, number, ...unknown[]]]>
          return ranges.map(([from, to, m]) => `${from}-${to}@${m[1]}`).sort().join(' ')
        }).catch(() => '')))
        return maps.length > 0 && maps[0] !== '' && maps.every((m) => m === maps[0])
      }, ms, 'the cluster to be healthy (cluster_state:ok and one slot map on every live node)')
    },
    async waitForNewMaster (key, old, ms = 30_000) {
      const deadline = Date.now() + ms
      let found: RedisNode | undefined
      await until(async () => {
        found = await cluster.masterOf(key)
        return found.port !== old.port
      }, ms, `a new master for ${key}`)
      await cluster.waitHealthy(Math.max(1000, deadline - Date.now()))
      return found as RedisNode
    }
  }
  await cluster.waitHealthy()
  if (replicas > 0) {
    await until(async () => {
      const roles = await Promise.all(nodes.map(async (n) => await info(n.port, 'replication')))
      return roles.filter((r) => /role:slave/.test(r) && /master_link_status:up/.test(r)).length === masters * replicas
    }, 20_000, 'every replica to sync with its master')
  }
  return cluster
}

async function redisCli (args: string[]): Promise<string> {
  return await new Promise<string>((resolve, reject) => {
    execFile('redis-cli', args, { timeout: 60_000 }, (err, stdout, stderr) => {
      if (err !== null) {
        const hint = (err as NodeJS.ErrnoException).code === 'ENOENT' ? ' (redis-cli is in Debian\'s redis-tools: `apt-get install -y redis-tools`; .ci/run installs it)' : ''
        reject(new Error(`redis-cli ${args.join(' ')} failed${hint}: ${err.message}\n${stdout}\n${stderr}`))
        return
      }
      resolve(stdout)
    })
  })
}
