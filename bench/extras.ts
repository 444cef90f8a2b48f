// Measurements beside the throughput table, each with its own Redis and gateways:
//   propagation  three `keygate serve` processes; a raw Redis client flips a key's
//                status, a user's status and a role's permissions 50 times each;
//                time from the write's acknowledgement until each instance serves
//                the new decision. Target: p99 <= 100 ms.
//   memory       one gateway with 100,000 personal keys cached (1,000 users, 10
//                roles); peak RSS of the process, after 5 s of load on one key and
//                after every key. Target: at most 40 MiB above the baseline's peak
//                under the same load.
//   sharedCore   the baseline, a second baseline and keygate (personal key, cache
//                warm, request log on) on the same core at the same moment, each
//                loaded by its own autocannon; the ratio of their throughputs is the
//                ratio of their CPU cost per request, measured under the very same
//                machine conditions (see docs/benchmarks.md, Method).
import { Redis } from 'ioredis'
import { Pool } from 'undici'
import { generateKey, type NewKey } from '@keygate/gateway/dist/registry/key-format.js'
import { redisKeys } from '@keygate/gateway/dist/registry/redis-keys.js'
import {
  benchKeys, keyRecord, PREFIX, registryCallsOf, seedPersonalKeys, startBenchRedis, startKeygate, type KeygateServer
} from './keygate.js'
import { startCpuMeter } from './cpu-meter.js'
import { runRound, type RoundResult } from './load.js'
import type { Launcher } from './process.js'
import { peakRssKiB } from './procfs.js'
import { BENCH_PATH, startBaseline } from './servers.js'
import { median, percentile } from './stats.js'
import { cpuPerReq } from './summary.js'
import type { RunningServer, ScenarioContext } from './types.js'

export interface ExtraResult {
  markdown: string
  failures: string[]
}

const CHANGES = 50
const PROPAGATION_TARGET_MS = 100
/** keygate's peak with the keys cached, above the baseline's under the same load, at most */
const ABOVE_BASELINE_TARGET_MIB = 40
const KEYS = 100_000
const ONE_KEY_WARMUP_MS = 5000

export async function propagation (ctx: ScenarioContext): Promise<ExtraResult> {
  const redis = await startBenchRedis(ctx, 'redis-extra')
  const client = new Redis(redis.url)
  const k = redisKeys(PREFIX)
  const personal = generateKey('kg_')
  const bot = generateKey('kg_')
  await client.multi()
    .hset(k.role('reader'), { permissions: 'users:read' })
    .hset(k.role('flip'), { permissions: 'users:read' })
    .hset(k.user('u1'), { org: 'acme', role: 'reader', status: 'active' })
    .hset(k.user('u2'), { org: 'acme', role: 'reader', status: 'active' })
    .hset(k.key(personal.id), keyRecord(personal, { type: 'personal', user: 'u1' }))
    .exec()
  const userKey = generateKey('kg_')
  await client.hset(k.key(userKey.id), keyRecord(userKey, { type: 'personal', user: 'u2' }))
  await client.hset(k.key(bot.id), keyRecord(bot, { type: 'bot', role: 'flip' }))

  const gateways: KeygateServer[] = []
  const pools: Pool[] = []
  try {
    for (let i = 0; i < 3; i++) {
      const gw = await startKeygate(ctx, `keygate-propagation-${i}`, {
        redisUrl: redis.url, unpinned: true, logLevel: 'warn'
      })
      gateways.push(gw)
      pools.push(new Pool(`http://127.0.0.1:${gw.port}`, { connections: 2 }))
    }
    const status = async (pool: Pool, key: string): Promise<number> => {
      const res = await pool.request({ method: 'GET', path: BENCH_PATH, headers: { authorization: `Bearer ${key}` } })
      await res.body.dump()
      return res.statusCode
    }
    const cases = [
      {
        what: "key's status",
        key: personal.key,
        redisKey: k.key(personal.id),
        field: 'status',
        values: ['revoked', 'active'],
        statuses: [401, 200]
      },
      {
        what: "user's status",
        key: userKey.key,
        redisKey: k.user('u2'),
        field: 'status',
        values: ['deactivated', 'active'],
        statuses: [401, 200]
      },
      {
        what: "role's permissions",
        key: bot.key,
        redisKey: k.role('flip'),
        field: 'permissions',
        values: ['orgs:read', 'users:read'],
        statuses: [403, 200]
      }
    ]
    const rows: string[] = []
    const failures: string[] = []
    const all: number[] = []
    for (const c of cases) {
      for (const pool of pools) await status(pool, c.key) // warm every cache
      const delays: number[] = []
      let lost = 0
      for (let i = 0; i < CHANGES; i++) {
        await client.hset(c.redisKey, c.field, c.values[i % 2] as string)
        const since = performance.now()
        const expected = c.statuses[i % 2] as number
        const arrivals = await Promise.all(pools.map(async (pool) => {
          while (performance.now() - since < 5000) {
            if (await status(pool, c.key) === expected) return performance.now() - since
          }
          return -1
        }))
        for (const ms of arrivals) { if (ms < 0) lost++; else delays.push(ms) }
      }
      delays.sort((a, b) => a - b)
      all.push(...delays)
      if (lost > 0) failures.push(`propagation: ${lost} changes of a ${c.what} never reached an instance`)
      rows.push(`| a ${c.what} | ${delays.length} | ${percentile(delays, 50).toFixed(1)} | ` +
        `${percentile(delays, 99).toFixed(1)} | ${(delays.at(-1) ?? Number.NaN).toFixed(1)} |`)
    }
    all.sort((a, b) => a - b)
    const p99 = percentile(all, 99)
    if (!(p99 <= PROPAGATION_TARGET_MS)) {
      failures.push(`propagation: p99 ${p99.toFixed(1)} ms is above the ${PROPAGATION_TARGET_MS} ms target`)
    }
    rows.push(`| **all** | ${all.length} | ${percentile(all, 50).toFixed(1)} | **${p99.toFixed(1)}** | ` +
      `${(all.at(-1) ?? Number.NaN).toFixed(1)} |`)
    return {
      markdown: [
        `### Change propagation: 3 instances, ${CHANGES} changes of each kind, written with a raw Redis client`,
        '',
        '| change | arrivals | p50 ms | p99 ms | max ms |',
        '|---|---:|---:|---:|---:|',
        ...rows,
        '',
        'Time from the write\'s acknowledgement to the first response with the new decision on each instance ' +
        `(keep-alive polling). Target p99 <= ${PROPAGATION_TARGET_MS} ms: ` +
        `${p99 <= PROPAGATION_TARGET_MS ? 'met' : 'NOT met'}.`,
        ''
      ].join('\n'),
      failures
    }
  } finally {
    await Promise.all(pools.map(async (p) => await p.close()))
    await Promise.all(gateways.map(async (g) => await g.stop()))
    client.disconnect()
    await redis.server.stop()
  }
}

/** `launcher`: how the gateway is started (bench/memory.ts: its node options) */
export async function memory (ctx: ScenarioContext, launcher?: Launcher): Promise<ExtraResult> {
  const redis = await startBenchRedis(ctx, 'redis-extra')
  const client = new Redis(redis.url)
  const keys = await seedPersonalKeys(client, KEYS)

  let gw: KeygateServer | undefined
  let pool: Pool | undefined
  try {
    // the baseline under the same load (32 connections, as many requests as keygate gets
    // below), for what keygate's peak is above the plain proxy's
    const baselinePeak = await baselinePeakKiB(ctx, ONE_KEY_WARMUP_MS, 2 * keys.length)
    // (the default cache.max_entries holds every key with its users, roles and org)
    gw = await startKeygate(ctx, 'keygate-memory', { redisUrl: redis.url, logLevel: 'warn', launcher })
    const before = peakRssKiB(gw.pid as number)
    pool = new Pool(`http://127.0.0.1:${gw.port}`, { connections: 32 })
    let bad = 0
    const use = async (key: NewKey): Promise<void> => {
      const res = await (pool as Pool).request({
        method: 'GET', path: BENCH_PATH, headers: { authorization: `Bearer ${key.key}` }
      })
      await res.body.dump()
      if (res.statusCode !== 200) bad++
    }
    // First the load alone, on one key: the first seconds of load raise the peak by
    // themselves (young generation touched, JIT at work), whatever the cache holds.
    const warmUntil = performance.now() + ONE_KEY_WARMUP_MS
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (performance.now() < warmUntil) await use(keys[0] as NewKey)
    }))
    const warmed = peakRssKiB(gw.pid as number)
    let next = 0
    const worker = async (): Promise<void> => {
      while (next < keys.length) await use(keys[next++] as NewKey)
    }
    await Promise.all(Array.from({ length: 32 }, worker))
    // a second pass: every key must now come from the cache
    const readsBefore = (await registryCallsOf(client)).records
    next = 0
    await Promise.all(Array.from({ length: 32 }, worker))
    const secondPassReads = (await registryCallsOf(client)).records - readsBefore
    const peak = peakRssKiB(gw.pid as number)
    const scrape = await (await fetch(`http://127.0.0.1:${gw.adminPort}/metrics`)).text()
    const gauge = (name: string): string => {
      const v = Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)`, 'm').exec(scrape)?.[1])
      return Number.isFinite(v) ? (v / 1048576).toFixed(1) : 'n/a'
    }
    const entries = /^keygate_cache_entries ([0-9]+)/m.exec(scrape)?.[1] ?? 'n/a'
    const evictions = Number(/^keygate_cache_evictions_total ([0-9.e+]+)/m.exec(scrape)?.[1])
    const spaces = [...scrape.matchAll(/^nodejs_heap_space_size_total_bytes\{space="([a-z_]+)"\} ([0-9.e+]+)/gm)]
      .map((m) => `${m[1] ?? ''} ${(Number(m[2]) / 1048576).toFixed(1)}`).join(', ')
    const now = `${gauge('process_resident_memory_bytes')} MiB RSS now, V8 heap used ` +
      `${gauge('nodejs_heap_size_used_bytes')} of ${gauge('nodejs_heap_size_total_bytes')} MiB, external ` +
      `${gauge('nodejs_external_memory_bytes')} MiB, ${entries} cache entries; heap spaces (MiB): ${spaces}`
    const peakMiB = (peak ?? Number.NaN) / 1024
    const baselineMiB = (baselinePeak ?? Number.NaN) / 1024
    const above = peakMiB - baselineMiB
    const failures: string[] = []
    if (bad > 0) failures.push(`memory: ${bad} requests were not 200`)
    if (evictions !== 0) {
      failures.push('memory: the default cache evicted ' +
        `${Number.isNaN(evictions) ? 'an unknown number of' : evictions} entries holding ${KEYS} keys`)
    }
    if (!(above <= ABOVE_BASELINE_TARGET_MIB)) {
      failures.push(`memory: peak RSS ${above.toFixed(1)} MiB above the baseline's is more than the ` +
        `${ABOVE_BASELINE_TARGET_MIB} MiB target`)
    }
    return {
      markdown: [
        `### Memory: ${KEYS.toLocaleString('en')} personal keys cached (1,000 users, 10 roles)`,
        '',
        `| peak RSS idle (MiB) | after ${ONE_KEY_WARMUP_MS / 1000} s of load on one key | after ` +
        `${KEYS.toLocaleString('en')} keys (MiB) | the baseline under the same load (MiB) | above the baseline (MiB) ` +
        '| registry records read in a second pass over every key |',
        '|---:|---:|---:|---:|---:|---:|',
        `| ${((before ?? Number.NaN) / 1024).toFixed(1)} | ${((warmed ?? Number.NaN) / 1024).toFixed(1)} | ` +
        `**${peakMiB.toFixed(1)}** | ${baselineMiB.toFixed(1)} | **${above.toFixed(1)}** | ${secondPassReads} |`,
        '',
        'VmHWM of the gateway process: started, loaded on one key (32 connections), then every key used twice. ' +
        `What the ${KEYS.toLocaleString('en')} cached keys add to the peak is the difference between the second and ` +
        'third columns. ' +
        'Above the baseline (the lean node:http + undici proxy, the same 32 connections and number of requests) ' +
        'at most ' +
        `${ABOVE_BASELINE_TARGET_MIB} MiB: ${above <= ABOVE_BASELINE_TARGET_MIB ? 'met' : 'NOT met'}. At the end: ` +
        `${now}.`,
        ''
      ].join('\n'),
      failures
    }
  } finally {
    await pool?.close()
    await gw?.stop()
    client.disconnect()
    await redis.server.stop()
  }
}

/** The baseline's peak RSS after `ms` of load and then `requests` more, 32 connections. */
async function baselinePeakKiB (ctx: ScenarioContext, ms: number, requests: number): Promise<number | undefined> {
  const baseline = await startBaseline(ctx.distDir, ctx.originUrl, ctx.serverCpus)
  const pool = new Pool(`http://127.0.0.1:${baseline.port}`, { connections: 32 })
  try {
    const use = async (): Promise<void> => {
      const res = await pool.request({ method: 'GET', path: BENCH_PATH })
      await res.body.dump()
    }
    const until = performance.now() + ms
    await Promise.all(Array.from({ length: 32 }, async () => { while (performance.now() < until) await use() }))
    let left = requests
    await Promise.all(Array.from({ length: 32 }, async () => { while (left-- > 0) await use() }))
    return peakRssKiB(baseline.pid)
  } finally {
    await pool.close()
    await baseline.stop()
  }
}

const SHARED_ROUNDS = 8
const SHARED_WARMUP_SEC = 15
const SHARED_ROUND_SEC = 4

interface SharedServer {
  name: string
  start: () => Promise<RunningServer>
  headers: Record<string, string>
}

/** one server's round, and its share of one core (as the main table's rounds: cpuPerReq reads both) */
type SharedMeasure = RoundResult & { serverCpuPct: number | undefined }

/**
 * Three servers pinned to the one server core and loaded at the same moment. Time-sharing
 * gives each about a third of the core, so each serves requests at the rate its cost per
 * request allows; whatever the host does to that core (a neighbour, a frequency change)
 * it does to all three at once. Every round starts new processes: on this VM two
 * identical processes can differ in speed by 10-15% for their whole life (where their
 * memory landed), so a ratio from one pair of processes is not a ratio of programs.
 * The control (a second, identical baseline) shows how far from 1.00x the method reads.
 */
export async function sharedCore (ctx: ScenarioContext): Promise<ExtraResult> {
  const cpus = ctx.serverCpus
  const kinds: SharedServer[] = [
    { name: 'baseline', start: async () => await startBaseline(ctx.distDir, ctx.originUrl, cpus), headers: {} },
    {
      name: 'control (the same plain proxy again)',
      start: async () => await startBaseline(ctx.distDir, ctx.originUrl, cpus),
      headers: {}
    },
    {
      name: 'keygate: personal key, cache warm, request log on',
      start: async () => await startKeygate(ctx, 'keygate-shared-core'),
      headers: { authorization: `Bearer ${benchKeys.personal.key}` }
    }
  ]
  const rounds: SharedMeasure[][] = []
  for (let r = 0; r < SHARED_ROUNDS; r++) rounds.push(await sharedRound(kinds))

  const failures: string[] = []
  const base = rounds.map((round) => round[0] as SharedMeasure)
  const usPerReq = (m: SharedMeasure): number => cpuPerReq(m) ?? Number.NaN
  const rows = kinds.map((kind, i) => {
    const mine = rounds.map((round) => round[i] as SharedMeasure)
    const ratios = mine.map((m, r) => m.reqPerSec / (base[r] as SharedMeasure).reqPerSec)
    const cpuRatios = mine.map((m, r) => usPerReq(base[r] as SharedMeasure) / usPerReq(m))
    const bad = mine.reduce((n, m) => n + m.unexpectedStatus + m.errors, 0)
    if (bad > 0) failures.push(`shared core: ${kind.name} got ${bad} unexpected statuses or errors`)
    return `| ${kind.name} | ${median(mine.map((m) => m.reqPerSec)).toFixed(0)} | **${median(ratios).toFixed(2)}×** ` +
      `| ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)} | ` +
      `${median(mine.map(usPerReq)).toFixed(0)} | ${median(cpuRatios).toFixed(2)}× | ` +
      `${median(mine.map((m) => m.serverCpuPct ?? Number.NaN)).toFixed(0)}% | ` +
      `${median(mine.map((m) => m.p99Ms)).toFixed(2)} |`
  })
  return {
    markdown: [
      `### Same core, same moment: ${kinds.length} servers loaded at once on CPU ${cpus ?? '(unpinned)'}`,
      '',
      '| server | req/s (median) | vs baseline (median of rounds) | min–max | server CPU µs/req | vs baseline, ' +
      'CPU/req | share of the core | p99 ms |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
      ...rows,
      '',
      `${SHARED_ROUNDS} rounds, each with new processes: ${SHARED_WARMUP_SEC} s of warm-up, then ${SHARED_ROUND_SEC} ` +
      's measured, 50 connections to each server. ' +
      'The servers time-share one core, so the machine\'s drift (which moves the interleaved table above by up to ' +
      '±20% from one round to the next here) ' +
      'reaches all three alike; the control row is the method\'s own noise. Latencies are not comparable with the ' +
      'table above (each server has a third of the core).',
      ''
    ].join('\n'),
    failures
  }
}

/** One round: start the servers, warm them up together, measure them together, stop them. */
async function sharedRound (kinds: readonly SharedServer[]): Promise<SharedMeasure[]> {
  const servers: RunningServer[] = []
  try {
    for (const kind of kinds) servers.push(await kind.start())
    const loadAll = async (sec: number): Promise<SharedMeasure[]> => await Promise.all(servers.map(async (s, i) => {
      const meter = startCpuMeter(s.pid, [])
      const result = await runRound(
        { url: `http://127.0.0.1:${s.port}${BENCH_PATH}`, headers: (kinds[i] as SharedServer).headers },
        { connections: 50, pipelining: 1, durationSec: sec }
      )
      return { ...result, serverCpuPct: meter().serverPct }
    }))
    await loadAll(SHARED_WARMUP_SEC)
    return await loadAll(SHARED_ROUND_SEC)
  } finally {
    await Promise.all(servers.map(async (s) => await s.stop()))
  }
}
