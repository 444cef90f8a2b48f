// The `warmUp` extra: a new instance started under full load on 100,000 keys. Its
// own Redis holds 100,000 personal keys (1,000 users, 10 roles) and a usage hash that
// says each was used (as a fleet already serving them would have written it). A new
// `keygate serve` (pinned like the table's servers) is started, and the moment it is
// ready autocannon loads it with every key cycled in order (50 connections), for
// RUN_S seconds. Per 1 s window from the first request: responses, and Redis's
// keys read (the registry's script reads four records a key here, the key's, its user's,
// its role's and its org's, each an HMGET in `INFO commandstats`) and all commands
// (`total_commands_processed`), sampled every 250 ms.
//
// The cached throughput is the median req/s of the windows in which the cache served
// (keys read at most 1% of the responses). The time to reach it is the end of the
// first window whose req/s is at least 90% of it; the time until the cache serves, the
// end of the first such window. Target: <= 10 s. Redis's keys read and
// commands per second (those the Lua script runs count too) are reported over
// those first seconds (the warm-up), peak and mean, beside the fill budget
// (`cache.fills_per_second`). The same run with `cache.warm_up: false` shows what the
// misses alone do.
import autocannon from 'autocannon'
import { Redis } from 'ioredis'
import { setTimeout as sleep } from 'node:timers/promises'
import type { NewKey } from '@keygate/gateway/dist/registry/key-format.js'
import { startCpuMeter } from './cpu-meter.js'
import type { ExtraResult } from './extras.js'
import { seedPersonalKeys, startBenchRedis, startKeygate } from './keygate.js'
import { treeCpuSeconds } from './procfs.js'
import { BENCH_PATH } from './servers.js'
import { median } from './stats.js'
import type { ScenarioContext } from './types.js'

const KEYS = 100_000
const RUN_S = 25
const SAMPLE_MS = 250
const REACHED = 0.9
const TARGET_S = 10
/** cache.fills_per_second's default */
const BUDGET = 20_000
/**
 * the records the registry's script reads for one key of `seedPersonalKeys`: its own, its user's, its role's, its org's
 */
const RECORDS_PER_KEY = 4

const pct = (v: number | undefined): string => v === undefined ? 'n/a' : `${v.toFixed(0)}%`

interface RedisSample { at: number, reads: number, commands: number, cpu: number }

interface WarmUpRun {
  label: string
  /** responses per 1 s window from the first request */
  perSecond: number[]
  /** Redis per 1 s window: registry reads and all commands */
  reads: number[]
  commands: number[]
  cachedReqPerSec: number
  /** seconds from the first request to the end of the first window at 90% of the cached req/s */
  reachedS: number | undefined
  /** seconds from the first request to the end of the first window served by the cache */
  servedS: number | undefined
  /** ms from the process's start to its first request (it was ready) */
  startToFirstMs: number
  statuses: Record<string, number>
  errors: number
  /** share of a core: the gateway, and everything else on the machine but the load generator and Redis */
  serverPct: number | undefined
  otherPct: number | undefined
  /** the gateway's CPU seconds from the first request to the end of the first window served by the cache */
  cpuToServedS: number | undefined
}

/** Redis's counters, and the gateway's CPU seconds so far */
async function redisSample (c: Redis, pid: number | undefined): Promise<RedisSample> {
  const [commandstats, stats] = await Promise.all([c.info('commandstats'), c.info('stats')])
  return {
    at: performance.now(),
    cpu: (pid === undefined ? undefined : treeCpuSeconds(pid)) ?? Number.NaN,
    reads: Number(/^cmdstat_hmget:calls=(\d+)/m.exec(commandstats)?.[1] ?? 0) / RECORDS_PER_KEY,
    commands: Number(/^total_commands_processed:(\d+)/m.exec(stats)?.[1] ?? 0)
  }
}

/** per 1 s window from `t0`, the increase of `field` (interpolated between samples) */
function perWindow (
  samples: RedisSample[], t0: number, windows: number, field: 'reads' | 'commands' | 'cpu'
): number[] {
  const at = (t: number): number => {
    for (let i = 1; i < samples.length; i++) {
      const a = samples[i - 1] as RedisSample
      const b = samples[i] as RedisSample
      if (b.at >= t) return a[field] + (b[field] - a[field]) * ((t - a.at) / Math.max(1, b.at - a.at))
    }
    return (samples.at(-1) as RedisSample)[field]
  }
  return Array.from({ length: windows }, (_, w) => at(t0 + (w + 1) * 1000) - at(t0 + w * 1000))
}

async function run (
  ctx: ScenarioContext, redisUrl: string, redisPid: number | undefined, keys: NewKey[], warmUp: boolean
): Promise<WarmUpRun> {
  const c = new Redis(redisUrl)
  const samples: RedisSample[] = []
  const sampling = { on: true, pid: undefined as number | undefined }
  const sampler = (async () => {
    while (sampling.on) {
      samples.push(await redisSample(c, sampling.pid))
      await sleep(SAMPLE_MS)
    }
  })()
  const spawnedAt = performance.now()
  const gw = await startKeygate(ctx, `keygate-warm-up${warmUp ? '' : '-off'}`, {
    redisUrl, logLevel: 'warn', cache: `{ max_entries: ${KEYS + 2000}, warm_up: ${String(warmUp)} }`
  })
  sampling.pid = gw.pid
  try {
    let next = 0
    const perSecond = new Array<number>(RUN_S + 1).fill(0)
    const meter = startCpuMeter(gw.pid as number, redisPid === undefined ? [] : [redisPid])
    const t0 = performance.now()
    const instance = autocannon({
      url: `http://127.0.0.1:${gw.port}${BENCH_PATH}`,
      connections: 50,
      pipelining: 1,
      duration: RUN_S,
      requests: [{
        setupRequest: (request) => ({
          ...request,
          headers: { ...request.headers, authorization: `Bearer ${(keys[next++ % KEYS] as NewKey).key}` }
        })
      }]
    })
    instance.on('response', () => {
      const w = Math.floor((performance.now() - t0) / 1000)
      if (w < perSecond.length) perSecond[w] = (perSecond[w] ?? 0) + 1
    })
    const result = await instance
    const usage = meter()
    sampling.on = false
    await sampler
    samples.push(await redisSample(c, gw.pid))

    const windows = perSecond.slice(0, RUN_S)
    const reads = perWindow(samples, t0, RUN_S, 'reads')
    const commands = perWindow(samples, t0, RUN_S, 'commands')
    const cpu = perWindow(samples.filter((x) => Number.isFinite(x.cpu)), t0, RUN_S, 'cpu')
    const cached = windows.filter((n, w) => n > 0 && (reads[w] ?? 0) <= n / 100)
    const cachedReqPerSec = median(cached)
    const served = windows.findIndex((n, w) => n > 0 && (reads[w] ?? 0) <= n / 100)
    const first = windows.findIndex((n) => n >= REACHED * cachedReqPerSec)
    const statuses: Record<string, number> = {}
    for (const [status, { count }] of Object.entries(result.statusCodeStats)) statuses[status] = count
    return {
      label: warmUp ? '`warm_up: true` (default)' : '`warm_up: false`',
      perSecond: windows,
      reads,
      commands,
      cachedReqPerSec,
      reachedS: first < 0 ? undefined : first + 1,
      servedS: served < 0 ? undefined : served + 1,
      startToFirstMs: t0 - spawnedAt,
      statuses,
      errors: result.errors,
      serverPct: usage.serverPct,
      otherPct: usage.otherPct,
      cpuToServedS: served < 0 ? undefined : cpu.slice(0, served + 1).reduce((a, b) => a + b, 0)
    }
  } finally {
    sampling.on = false
    await sampler
    await gw.stop()
    c.disconnect()
  }
}

export async function warmUp (ctx: ScenarioContext): Promise<ExtraResult> {
  const redis = await startBenchRedis(ctx, 'redis-extra')
  const client = new Redis(redis.url)
  const keys = await seedPersonalKeys(client, KEYS, new Date().toISOString())

  try {
    const runs = [
      await run(ctx, redis.url, redis.server.pid, keys, true),
      await run(ctx, redis.url, redis.server.pid, keys, false)
    ]
    const failures: string[] = []
    const rows = runs.map((r) => {
      const upTo = r.reachedS ?? RUN_S
      const during = (xs: number[]): { peak: number, mean: number } => {
        const w = xs.slice(0, upTo)
        return { peak: Math.max(...w), mean: w.reduce((a, b) => a + b, 0) / w.length }
      }
      const reads = during(r.reads)
      const commands = during(r.commands)
      const bad = Object.entries(r.statuses).filter(([s]) => s !== '200').reduce((n, [, c]) => n + c, 0) + r.errors
      if (bad > 0) {
        failures.push(`warm-up (${r.label}): ${bad} responses were not 200 (${JSON.stringify(r.statuses)}, ` +
          `${r.errors} errors)`)
      }
      const within = (s: number | undefined, bold: boolean): string =>
        s === undefined ? `not within ${RUN_S} s` : bold ? `**${s} s**` : `${s} s`
      return `| ${r.label} | ${within(r.reachedS, true)} | ${within(r.servedS, false)} | ` +
        `${r.cpuToServedS === undefined ? 'n/a' : r.cpuToServedS.toFixed(1)} | ` +
        `${Number.isFinite(r.cachedReqPerSec) ? r.cachedReqPerSec.toFixed(0) : 'n/a'} | ` +
        `${reads.peak.toFixed(0)} / ${reads.mean.toFixed(0)} | ${commands.peak.toFixed(0)} / ` +
        `${commands.mean.toFixed(0)} | ${(r.startToFirstMs / 1000).toFixed(1)} s | ${pct(r.serverPct)} / ` +
        `${pct(r.otherPct)} | ${r.perSecond.slice(0, 12).join(' ')} |`
    })
    const shipped = runs[0] as WarmUpRun
    if (!(shipped.reachedS !== undefined && shipped.reachedS <= TARGET_S)) {
      failures.push(`warm-up: cached throughput not reached within ${TARGET_S} s of the first request`)
    }
    return {
      markdown: [
        `### Warm-up: a new instance started under full load on ${KEYS.toLocaleString('en')} keys`,
        '',
        '| | time to cached req/s (≥ 90%) from the first request | to the cache serving (keys read ≤ 1% of ' +
        'responses) | gateway CPU seconds until then | cached req/s | registry keys read/s until then, peak / mean | ' +
        'Redis commands/s, peak / mean | process start to first request | CPU: gateway / other activity | req/s in ' +
        'each of the first 12 s |',
        '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
        ...rows,
        '',
        `${KEYS.toLocaleString('en')} personal keys (1,000 users, 10 roles), each in the usage hash; the gateway ` +
        `loaded from the moment it is ready, every key cycled in order, 50 connections, ${RUN_S} s. ` +
        'CPU: the gateway\'s share of a core over the run, and that of every other process on the machine but the ' +
        'load generator and Redis: a busy machine slows the warm-up; the gateway\'s CPU seconds until the cache ' +
        'serves are what the warm-up takes on a core of its own. ' +
        'Cached req/s: the median of the 1 s windows in which keys read were at most 1% of the responses (n/a: there ' +
        'was none). ' +
        'Keys read: the registry\'s records read (HMGET inside its script) ÷ 4, the records of a key here (its own, ' +
        'its user\'s, its role\'s, its org\'s); Redis commands include those the script runs. Fill budget ' +
        `${BUDGET.toLocaleString('en')} keys/s (the default). Target <= ${TARGET_S} s: ` +
        `${shipped.reachedS !== undefined && shipped.reachedS <= TARGET_S ? 'met' : 'NOT met'}.`,
        ''
      ].join('\n'),
      failures
    }
  } finally {
    client.disconnect()
    await redis.server.stop()
  }
}
