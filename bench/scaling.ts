// The scaling simulation (docs/scaling.md), run on its own:
//
//   node bench/dist/scaling.js     (SCALING_SECONDS 5, SCALING_INSTANCES 1,2,4, SCALING_CONNECTIONS 16 per
//                                   gateway, SCALING_CLUSTER 1, SCALING_REVOKES 50, SCALING_SETTLE 6)
//
// 1, 2 and 4 `keygate serve` processes (unpinned, request log at warn, usage counting on as
// in the product) on one redis-server, then the largest number on a 3-shard Redis Cluster
// (prefix `{kgbench}:`). For each: an idle window (the background a gateway asks of Redis
// with no traffic), then each kind of key loaded on every gateway at once (autocannon,
// SCALING_CONNECTIONS each): a cached personal key, cold keys (a cache miss per request,
// bench/cold-keys.ts), a key under a rate limit, a metered key (quota). After each load
// the window stays open SCALING_SETTLE s, so the usage and last-used writes of its
// requests (every 5 s) fall in it. Around each window: INFO cpu, stats and commandstats
// of Redis (every node of the Cluster): Redis's CPU (used_cpu_sys + used_cpu_user), its
// commands by name, their usec, and its network bytes, per 1,000 responses.
//
// The model's prediction for a window: the per-request Redis CPU of the kind measured at
// the first number of instances (its CPU less its background), plus the idle window's
// background per gateway-second times the gateways and the window. Commands per request are
// exact whatever the machine does; CPU is approximate on a shared machine (the idle
// window shows its floor). Then the revocation bound (bench/scaling-revoke.ts) on 3
// instances at full load. Progress on stderr, the report (markdown) on stdout.
import { Redis } from 'ioredis'
import { generateKey, type NewKey } from '@keygate/gateway/dist/registry/key-format.js'
import { redisKeys } from '@keygate/gateway/dist/registry/redis-keys.js'
import { coldKeyCount, coldKeys, nextColdAuthorization, seedColdKeys } from './cold-keys.js'
import {
  BENCH_QUOTA, BENCH_RATE_LIMIT, benchKeys, keyRecord, seed, startKeygate, type KeygateServer
} from './keygate.js'
import { runRound } from './load.js'
import { stopAll } from './process.js'
import { calls, delta, snapshot, startCluster, startRedis, type RedisDelta } from './scaling-redis.js'
import { revocationSummary, revocationUnderLoad } from './scaling-revoke.js'
import { BENCH_PATH, startOrigin } from './servers.js'

const env = process.env
const SECONDS = Number(env['SCALING_SECONDS'] ?? '5')
const SETTLE = Number(env['SCALING_SETTLE'] ?? '6')
/** (0: none; the revocation alone) */
const INSTANCES = (env['SCALING_INSTANCES'] ?? '1,2,4').split(',').map(Number).filter((n) => n > 0)
const CONNECTIONS = Number(env['SCALING_CONNECTIONS'] ?? '16')
const CLUSTER = env['SCALING_CLUSTER'] !== '0'
const REVOKES = Number(env['SCALING_REVOKES'] ?? '50')
/** what the usage, rate-limit and quota scripts and the registry script run inside Redis */
const INSIDE = new Set(['hmget', 'exists', 'get', 'time', 'hgetall', 'hincrby', 'hdel', 'pexpire', 'hget', 'expireat'])

interface Kind { name: string, headers: Record<string, string>, headersFor?: () => Record<string, string> }
const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` })
const KINDS: Kind[] = [
  { name: 'cached', headers: bearer(benchKeys.personal.key) },
  { name: 'cold miss', headers: {}, headersFor: () => ({ authorization: nextColdAuthorization() }) },
  { name: 'rate-limited', headers: bearer(benchKeys.limited.key) },
  { name: 'metered (quota)', headers: bearer(benchKeys.metered.key) }
]

interface Measured {
  kind: string
  gateways: number
  responses: number
  bad: number
  misses: number
  windowSec: number
  d: RedisDelta
  /** the other nodes of a Cluster, summed */
  others?: RedisDelta
}

/** every gateway of the simulation: unpinned, the request log at warn, time to start on a loaded machine */
const GATEWAY = { unpinned: true, logLevel: 'warn', readyTimeoutMs: 120_000 }
const names = (d: RedisDelta): string => [...d.commands].map(([n, c]) => `${n} ${c.calls}`).join(', ')
const log = (line: string): void => { process.stderr.write(`[scaling] ${line}\n`) }
const fmt = (n: number, digits = 1): string => Number.isFinite(n) ? n.toFixed(digits) : 'n/a'

/** The registry of the simulation, written through a plain connection (on a Cluster: the slot's master). */
async function seedAll (url: string, prefix: string, revokeKeys: readonly NewKey[]): Promise<void> {
  const client = new Redis(url)
  try {
    if (prefix !== 'keygate:bench:') throw new Error('seed() writes under keygate:bench: only')
    await seed(url)
    await seedColdKeys(client, prefix, keyRecord)
    const k = redisKeys(prefix)
    const batch = client.pipeline()
    for (const key of revokeKeys) batch.hset(k.key(key.id), keyRecord(key, { type: 'personal', user: 'bench-user' }))
    await batch.exec()
  } finally {
    client.disconnect()
  }
}

function sum (ds: readonly RedisDelta[]): RedisDelta {
  const out: RedisDelta = { cpuUs: 0, inBytes: 0, outBytes: 0, commands: new Map() }
  for (const d of ds) {
    out.cpuUs += d.cpuUs
    out.inBytes += d.inBytes
    out.outBytes += d.outBytes
    for (const [name, c] of d.commands) {
      const was = out.commands.get(name) ?? { calls: 0, usec: 0 }
      out.commands.set(name, { calls: was.calls + c.calls, usec: was.usec + c.usec })
    }
  }
  return out
}

async function misses (gws: readonly KeygateServer[]): Promise<number> {
  let n = 0
  for (const g of gws) n += await (g.cacheMisses as () => Promise<number>)()
  return n
}

/** One window: INFO of every node before and after `work` and SETTLE s more; the master's delta and the rest. */
async function window (
  stats: Redis[], gws: readonly KeygateServer[], work: () => Promise<{ responses: number, bad: number }>
): Promise<Omit<Measured, 'kind' | 'gateways'>> {
  const before = await Promise.all(stats.map(async (s) => await snapshot(s)))
  const missesBefore = await misses(gws)
  const t0 = performance.now()
  const { responses, bad } = await work()
  await new Promise((resolve) => setTimeout(resolve, SETTLE * 1000))
  const windowSec = (performance.now() - t0) / 1000
  const after = await Promise.all(stats.map(async (s) => await snapshot(s)))
  const deltas = before.map((b, i) => delta(b, after[i] as typeof b))
  const others = deltas.length > 1 ? sum(deltas.slice(1)) : undefined
  const missed = await misses(gws) - missesBefore
  const d = deltas[0] as RedisDelta
  return { responses, bad, misses: missed, windowSec, d, ...(others === undefined ? {} : { others }) }
}

async function simulate (
  originUrl: string, redisUrl: string, prefix: string, gateways: number, stats: Redis[]
): Promise<Measured[]> {
  const ctx = { originUrl, serverCpus: undefined, auxCpus: undefined, distDir: new URL('.', import.meta.url).pathname }
  const gws: KeygateServer[] = []
  try {
    for (let i = 0; i < gateways; i++) {
      gws.push(await startKeygate(ctx, `keygate-scaling-${i}`, { redisUrl, prefix, ...GATEWAY }))
    }
    const load = async (kind: Kind, sec: number): Promise<{ responses: number, bad: number }> => {
      const rounds = await Promise.all(gws.map(async (g) => await runRound({
        url: `http://127.0.0.1:${g.port}${BENCH_PATH}`, headers: kind.headers, headersFor: kind.headersFor, expectedStatus: 200
      }, { connections: CONNECTIONS, pipelining: 1, durationSec: sec })))
      for (const r of rounds) {
        for (const [status, n] of Object.entries(r.statusCounts)) {
          if (status !== '200') log(`${kind.name}: ${n} × ${status}`)
        }
        if (r.errors > 0) log(`${kind.name}: ${r.errors} socket errors (${r.timeouts} timeouts)`)
      }
      return {
        responses: rounds.reduce((n, r) => n + r.responses, 0),
        bad: rounds.reduce((n, r) => n + r.unexpectedStatus + r.errors, 0)
      }
    }
    log(`${gateways} gateway(s): warm-up`)
    await load(KINDS[0] as Kind, 3)
    const out: Measured[] = []
    log(`${gateways} gateway(s): idle`)
    out.push({
      kind: 'idle',
      gateways,
      ...await window(stats, gws, async () => {
        await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000))
        return { responses: 0, bad: 0 }
      })
    })
    for (const kind of KINDS) {
      log(`${gateways} gateway(s): ${kind.name}`)
      out.push({ kind: kind.name, gateways, ...await window(stats, gws, async () => await load(kind, SECONDS)) })
    }
    return out
  } finally {
    await Promise.all(gws.map(async (g) => await g.stop()))
  }
}

/** µs of Redis CPU per second with no gateway at all (serverCron, the INFO reads): the server's floor */
let floorUs = 0
/** µs of Redis CPU a gateway adds per second with no traffic (the idle window, less the floor) */
const background = (rows: readonly Measured[], gateways: number): number => {
  const idle = rows.find((r) => r.kind === 'idle' && r.gateways === gateways)
  return idle === undefined ? 0 : Math.max(0, idle.d.cpuUs / idle.windowSec - floorUs) / gateways
}
/** a window's Redis CPU less the floor's */
const cpuOf = (r: Measured): number => r.d.cpuUs - floorUs * r.windowSec

function table (title: string, rows: readonly Measured[], model: ReadonlyMap<string, number>, bg: number): string[] {
  return [...header(title), ...tableRows(rows, model, bg)]
}

function header (title: string): string[] {
  return [
    `### ${title}`, '',
    '| gateways | kind | responses (req/s under load) | not 200 | misses / 1k | script calls / 1k | HMGET / 1k ' +
    '| commands sent / 1k ' +
    '| all commands / 1k (by name) | bytes in / out per req | Redis CPU ms / 1k req: measured | model | ' +
    'commandstats usec / 1k req (commands sent) | EVALSHA usec_per_call |',
    '|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|'
  ]
}

function tableRows (rows: readonly Measured[], model: ReadonlyMap<string, number>, bg: number): string[] {
  const usecPerCall = (d: RedisDelta, name: string): string => {
    const c = d.commands.get(name)
    return c === undefined || c.calls === 0 ? '—' : fmt(c.usec / c.calls)
  }
  const per1k = (n: number, r: Measured): string => fmt(1000 * n / r.responses)
  const lines: string[] = []
  for (const r of rows) {
    const scripts = calls(r.d, 'evalsha', 'eval')
    const sent = [...r.d.commands].filter(([name]) => !INSIDE.has(name)).reduce((n, [, c]) => n + c.calls, 0)
    const usec = [...r.d.commands].filter(([name]) => !INSIDE.has(name)).reduce((n, [, c]) => n + c.usec, 0)
    if (r.kind === 'idle') {
      lines.push(`| ${r.gateways} | idle (${fmt(r.windowSec, 0)} s) | — | — | — | — | — | ` +
        `${fmt(sent / r.windowSec / r.gateways)} a gateway-second | ${names(r.d)} ` +
        `| — | ${fmt(background([r], r.gateways) / 1000, 3)} ms a gateway-second (floor ${fmt(floorUs / 1000, 3)} ` +
        'ms/s removed) | — | — | — |')
      continue
    }
    const perReq = model.get(r.kind)
    const predicted = perReq === undefined ? NaN : 1000 * perReq + 1000 * bg * r.gateways * r.windowSec / r.responses
    const byName = [...r.d.commands].sort((a, b) => b[1].calls - a[1].calls)
      .map(([n, c]) => `${n} ${fmt(1000 * c.calls / r.responses)}`).join(', ')
    lines.push(`| ${r.gateways} | ${r.kind} | ${r.responses} (${fmt(r.responses / SECONDS, 0)}) | ${r.bad} | ` +
      `${per1k(r.misses, r)} | ${per1k(scripts, r)} | ${per1k(calls(r.d, 'hmget'), r)} | ${per1k(sent, r)} | ` +
      `${byName} | ` +
      `${fmt(r.d.inBytes / r.responses, 0)} / ${fmt(r.d.outBytes / r.responses, 0)} | ` +
      `**${fmt(cpuOf(r) / r.responses, 2)}** | ${fmt(predicted / 1000, 2)} | ${fmt(usec / r.responses, 2)} | ` +
      `${usecPerCall(r.d, 'evalsha')} |`)
    if (r.others !== undefined) {
      lines.push(`| | (the other masters) | | | | ${per1k(calls(r.others, 'evalsha', 'eval'), r)} | ` +
        `${per1k(calls(r.others, 'hmget'), r)} | | ${names(r.others)} | ` +
        `${fmt(r.others.inBytes / r.responses, 0)} / ${fmt(r.others.outBytes / r.responses, 0)} | ` +
        `${fmt((r.others.cpuUs - 2 * floorUs * r.windowSec) / r.responses, 2)} | | | |`)
    }
  }
  return lines
}

/** Per kind: Redis CPU µs a request, less the background, at the first configuration. */
function fitModel (rows: readonly Measured[]): Map<string, number> {
  const first = rows[0]?.gateways ?? 1
  const bg = background(rows, first)
  const model = new Map<string, number>()
  for (const r of rows) {
    if (r.gateways !== first || r.kind === 'idle' || r.responses === 0) continue
    model.set(r.kind, Math.max(0, cpuOf(r) - bg * r.gateways * r.windowSec) / r.responses)
  }
  return model
}

const distDir = new URL('.', import.meta.url).pathname
/** the one redis-server's model, which the Cluster's master is compared with */
let model = new Map<string, number>()
let standaloneBg = 0
const report = { push: (...lines: string[]): void => { process.stdout.write(lines.map((l) => `${l}\n`).join('')) } }
const failures: string[] = []
const origin = await startOrigin(distDir, undefined)
const originUrl = `http://127.0.0.1:${origin.port}`
const revokeKeys = Array.from({ length: REVOKES }, () => generateKey('kg_'))
coldKeys()
try {
  const redis = await startRedis('redis-scaling')
  const url = `redis://127.0.0.1:${redis.port}`
  const stats = new Redis(url)
  const prefix = 'keygate:bench:'
  try {
    log(`seeding ${coldKeyCount()} cold keys`)
    await seedAll(url, prefix, revokeKeys)
    const s0 = await snapshot(stats)
    await new Promise((resolve) => setTimeout(resolve, 1000 * (SECONDS + SETTLE)))
    floorUs = delta(s0, await snapshot(stats)).cpuUs / (SECONDS + SETTLE)
    log(`the server's floor: ${fmt(floorUs, 0)} µs of CPU a second`)
    const rows: Measured[] = []
    report.push(...header(
      `One redis-server: ${INSTANCES.join(', ')} gateways, ${SECONDS} s of load + ${SETTLE} s a window`
    ))
    for (const n of INSTANCES) {
      const these = await simulate(originUrl, url, prefix, n, [stats])
      rows.push(...these)
      if (n === INSTANCES[0]) {
        model = fitModel(rows)
        standaloneBg = background(rows, n)
      }
      report.push(...tableRows(these, model, standaloneBg))
    }
    report.push('')
    report.push(`Model (Redis CPU µs a request, from ${INSTANCES[0] ?? 1} gateway(s), background removed): ` +
      [...model].map(([k, v]) => `${k} ${fmt(v, 2)}`).join(', ') +
      `; background ${fmt(background(rows, INSTANCES[0] ?? 1), 0)} µs a gateway-second.`, '')
    for (const r of rows) if (r.bad > 0) failures.push(`${r.gateways} gateways, ${r.kind}: ${r.bad} responses not 200`)

    log('revocation: 3 gateways at full load')
    const ctx = { originUrl, serverCpus: undefined, auxCpus: undefined, distDir }
    const gws: KeygateServer[] = []
    try {
      for (let i = 0; i < 3; i++) {
        gws.push(await startKeygate(ctx, `keygate-revoke-${i}`, { redisUrl: url, prefix, ...GATEWAY }))
      }
      const before = await snapshot(stats)
      const missesBefore = await misses(gws)
      const r = await revocationUnderLoad(gws, url, prefix, revokeKeys, benchKeys.personal.key, CONNECTIONS)
      const d = delta(before, await snapshot(stats))
      const missed = await misses(gws) - missesBefore
      const bg = (floorUs + background(rows, INSTANCES[0] ?? 1) * 3) * r.wallSec
      const perChange = [...d.commands].filter(([n]) => n !== 'ping')
        .map(([n, c]) => `${n} ${fmt(c.calls / REVOKES)}`).join(', ')
      report.push('### Revocation at full load: 3 gateways, one redis-server', '',
        `${REVOKES} keys, each cached by every instance, revoked one at a time through the admin action while each ` +
        `instance serves a cached key to ${CONNECTIONS} connections (${fmt(r.loadReqPerSec, 0)} req/s in all, ` +
        `${r.loadBad} not 200; the load on a thread of its own), each instance probed with the key every ms: ` +
        `from the action's call, ${revocationSummary(r)}. Target: p99 <= 20 ms for every request sent after it. ` +
        'Redis per change (the load\'s cached key asks nothing of it), every command but PING: ' +
        `${perChange}; bytes in / out ${fmt(d.inBytes / REVOKES, 0)} / ${fmt(d.outBytes / REVOKES, 0)}; ` +
        `Redis CPU ${fmt(Math.max(0, d.cpuUs - bg) / REVOKES, 0)} µs a change (the floor and the gateways' idle ` +
        `background removed); cache misses in all ${missed} (${fmt(missed / REVOKES)} a change).`, '')
      if (r.lost > 0) failures.push(`revocation: ${r.lost} refusals never came`)
    } finally {
      await Promise.all(gws.map(async (g) => await g.stop()))
    }
  } finally {
    stats.disconnect()
    await redis.stop()
  }

  if (CLUSTER && INSTANCES.length > 0) {
    const n = Math.max(...INSTANCES)
    log(`cluster: 3 masters, ${n} gateways`)
    const cluster = await startCluster(3)
    const prefix = '{kgbench}:'
    try {
      const master = await cluster.masterOf(`${prefix}keys`)
      const others = cluster.nodes.filter((x) => x !== master)
      const masterUrl = `redis://127.0.0.1:${master.port}`
      const client = new Redis(masterUrl)
      try {
        const k = redisKeys(prefix)
        await client.multi()
          .hset(k.role('reader'), { permissions: 'users:read' })
          .hset(k.user('bench-user'), { org: 'acme', role: 'reader', status: 'active' })
          .hset(k.key(benchKeys.personal.id), keyRecord(benchKeys.personal, { type: 'personal', user: 'bench-user' }))
          .hset(k.key(benchKeys.limited.id), keyRecord(benchKeys.limited, {
            type: 'personal', user: 'bench-user', rate_limit: BENCH_RATE_LIMIT
          }))
          .hset(k.key(benchKeys.metered.id), keyRecord(benchKeys.metered, {
            type: 'personal', user: 'bench-user', quota: BENCH_QUOTA
          }))
          .exec()
        await seedColdKeys(client, prefix, keyRecord)
      } finally {
        client.disconnect()
      }
      const stats = [master, ...others].map((x) => new Redis(x.port, '127.0.0.1'))
      try {
        // the Cluster's floor: its master's CPU with no gateway (the cluster bus adds to serverCron)
        const s0 = await snapshot(stats[0] as Redis)
        await new Promise((resolve) => setTimeout(resolve, 1000 * (SECONDS + SETTLE)))
        floorUs = delta(s0, await snapshot(stats[0] as Redis)).cpuUs / (SECONDS + SETTLE)
        log(`the Cluster master's floor: ${fmt(floorUs, 0)} µs of CPU a second`)
        const rows = await simulate(originUrl, cluster.url, prefix, n, stats)
        report.push(...table(`Redis Cluster, 3 masters (prefix \`${prefix}\`: every registry key in one slot), ` +
          `${n} gateways; ` +
          'first line of each kind: the slot\'s master; second: the other two masters; model: the one redis-server\'s',
        rows, model, standaloneBg), '')
        for (const r of rows) if (r.bad > 0) failures.push(`cluster, ${r.kind}: ${r.bad} responses not 200`)
      } finally {
        for (const s of stats) s.disconnect()
      }
    } finally {
      await cluster.stop()
    }
  }
  for (const f of failures) process.stdout.write(`!!! ${f}\n`)
  process.exitCode = failures.length === 0 ? 0 : 1
} finally {
  await stopAll()
}
