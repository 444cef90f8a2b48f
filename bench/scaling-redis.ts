// What the scaling simulation (bench/scaling.ts) reads of a redis-server, and the
// 3-shard Redis Cluster it runs on once. A snapshot is one `INFO cpu stats
// commandstats` (one command, so the reading itself adds one INFO and its reply to
// the deltas, which are left out: `info` is skipped, its bytes are a few KiB a phase).
import { execFile } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { waitForRedis } from '@keygate/gateway/dist/registry/redis-client.js'
import { freePort } from './port.js'
import { spawnServer, type ChildServer } from './process.js'

export interface RedisSnapshot {
  /** used_cpu_sys + used_cpu_user of the whole server, seconds */
  cpuSec: number
  /** total_net_input_bytes, total_net_output_bytes */
  inBytes: number
  outBytes: number
  /** commandstats: calls and usec by command (lower case; `client|id` for subcommands) */
  commands: Map<string, { calls: number, usec: number }>
}

export interface RedisDelta {
  cpuUs: number
  inBytes: number
  outBytes: number
  commands: Map<string, { calls: number, usec: number }>
}

const field = (info: string, name: string): number =>
  Number(new RegExp(`^${name}:([0-9.]+)`, 'm').exec(info)?.[1] ?? NaN)

export async function snapshot (client: Redis): Promise<RedisSnapshot> {
  const info = await client.info('cpu', 'stats', 'commandstats')
  const commands = new Map<string, { calls: number, usec: number }>()
  for (const m of info.matchAll(/^cmdstat_([a-z|_-]+):calls=(\d+),usec=(\d+)/gm)) {
    commands.set(m[1] as string, { calls: Number(m[2]), usec: Number(m[3]) })
  }
  return {
    cpuSec: field(info, 'used_cpu_sys') + field(info, 'used_cpu_user'),
    inBytes: field(info, 'total_net_input_bytes'),
    outBytes: field(info, 'total_net_output_bytes'),
    commands
  }
}

export function delta (a: RedisSnapshot, b: RedisSnapshot): RedisDelta {
  const commands = new Map<string, { calls: number, usec: number }>()
  for (const [name, after] of b.commands) {
    if (name === 'info') continue
    const before = a.commands.get(name) ?? { calls: 0, usec: 0 }
    if (after.calls > before.calls) {
      commands.set(name, { calls: after.calls - before.calls, usec: after.usec - before.usec })
    }
  }
  return {
    cpuUs: (b.cpuSec - a.cpuSec) * 1e6, inBytes: b.inBytes - a.inBytes, outBytes: b.outBytes - a.outBytes, commands
  }
}

export function calls (d: RedisDelta, ...names: string[]): number {
  return names.reduce((n, name) => n + (d.commands.get(name)?.calls ?? 0), 0)
}

/** A redis-server of the simulation's, unpinned, without persistence. */
export async function startRedis (name: string, extra: string[] = []): Promise<ChildServer> {
  const port = await freePort()
  return await spawnServer({
    name,
    command: 'redis-server',
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extra],
    env: {},
    cpus: undefined,
    port,
    waitReady: async (signal) => { await waitForRedis(`redis://127.0.0.1:${port}`, { signal }) }
  })
}

export interface BenchCluster {
  nodes: ChildServer[]
  /** redis+cluster://<every node> */
  url: string
  /** the node that serves `key`'s slot */
  masterOf: (key: string) => Promise<ChildServer>
  stop: () => Promise<void>
}

/** `masters` cluster-enabled redis-servers joined with `redis-cli --cluster create` (no replicas). */
export async function startCluster (masters = 3): Promise<BenchCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'keygate-scaling-cluster-'))
  const nodes: ChildServer[] = []
  const stop = async (): Promise<void> => { await Promise.all(nodes.map(async (n) => await n.stop())) }
  try {
    for (let i = 0; i < masters; i++) {
      const bus = await freePort()
      nodes.push(await startRedis(`redis-cluster-${i}`, [
        '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${i}.conf`),
        '--cluster-port', String(bus), '--dir', dir
      ]))
    }
    await promisify(execFile)('redis-cli', [
      '--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'
    ], { timeout: 60_000 })
    const deadline = Date.now() + 30_000
    for (const n of nodes) {
      const c = new Redis(n.port, '127.0.0.1')
      try {
        while (!/cluster_state:ok/.test(await c.call('CLUSTER', 'INFO') as string)) {
          if (Date.now() > deadline) throw new Error(`cluster node ${n.port} not ok after 30 s`)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      } finally {
        c.disconnect()
      }
    }
  } catch (err) {
    await stop()
    throw err
  }
  return {
    nodes,
    url: `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
    async masterOf (key) {
      const c = new Redis((nodes[0] as ChildServer).port, '127.0.0.1')
      try {
        const slot = Number(await c.call('CLUSTER', 'KEYSLOT', key))
        const ranges = await c.call('CLUSTER', 'SLOTS') as Array<[number, number, [string, number]]>
        const port = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2][1]
        const node = nodes.find((n) => n.port === Number(port))
        if (node === undefined) throw new Error(`no node serves ${key}`)
        return node
      } finally {
        c.disconnect()
      }
    },
    stop
  }
}
