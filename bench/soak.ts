// The `soak` extra (opt-in: BENCH_EXTRAS=soak): one gateway with 100,000 personal keys
// (1,000 users, 10 roles) cached, every key used once first (32 connections), then at
// full load for BENCH_SOAK_SECONDS (default 600) on the keys cycled in order across 32
// autocannon connections, all served from the cache. The process's VmRSS is sampled every
// SAMPLE_MS; reported: RSS before the load, with every key cached, at the first and
// last sample, the peak (VmHWM), and the least-squares slope of RSS over the second
// half of the run (the first half is the warm-up: the JIT, the heap growing to its
// working size). A flat RSS has a slope near 0 MiB/min; a leak shows as a steady rise.
//
// RSS alone cannot tell a leak from memory V8 or malloc holds without using it, so the
// gateway's own metrics are scraped every HEAP_SAMPLE_MS too: the old space's used
// bytes (the heap's long-lived objects: the cache, and whatever leaks), the whole
// heap's, and the memory outside the heap (buffers). Each is reported as the slope of
// its lowest value in each minute over the second half (the low points follow the
// full collections, when only live objects remain). A response that is not a 200 is
// reported with its reason from `keygate_requests_total`.
import { Redis } from 'ioredis'
import { Pool } from 'undici'
import type { ExtraResult } from './extras.js'
import { seedPersonalKeys, startBenchRedis, startKeygate, type KeygateServer } from './keygate.js'
import { runRound } from './load.js'
import { peakRssKiB, rssKiB } from './procfs.js'
import { BENCH_PATH } from './servers.js'
import type { ScenarioContext } from './types.js'

const KEYS = 100_000
const CONNECTIONS = 32
const SAMPLE_MS = 2000
const HEAP_SAMPLE_MS = 10_000

/** the gateway's memory as its metrics report it, MiB */
interface HeapSample { x: number, oldUsed: number, heapUsed: number, external: number }

async function scrape (adminPort: number): Promise<string> {
  return await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text()
}

function gaugeMiB (text: string, pattern: string): number {
  const m = new RegExp(`^${pattern} ([0-9.e+]+)`, 'm').exec(text)
  return m === null ? Number.NaN : Number(m[1]) / 1048576
}

/** one point a minute: the lowest value of that minute */
function minutely (
  samples: readonly HeapSample[], field: 'oldUsed' | 'heapUsed' | 'external'
): Array<{ x: number, y: number }> {
  const byMinute = new Map<number, number>()
  for (const s of samples) {
    const minute = Math.floor(s.x)
    const v = s[field]
    if (!Number.isFinite(v)) continue
    byMinute.set(minute, Math.min(byMinute.get(minute) ?? Number.POSITIVE_INFINITY, v))
  }
  return [...byMinute].map(([x, y]) => ({ x: x + 0.5, y }))
}

/** responses that were not a 200, by reason, from the gateway's own counter */
function refusals (text: string): string {
  const out: string[] = []
  for (const m of text.matchAll(/^keygate_requests_total\{([^}]*)\} ([0-9.e+]+)/gm)) {
    const labels = m[1] as string
    if (/status="200"/.test(labels)) continue
    const reason = /reason="([^"]*)"/.exec(labels)?.[1] ?? '?'
    const status = /status="([^"]*)"/.exec(labels)?.[1] ?? '?'
    out.push(`${status} ${reason}: ${m[2] as string}`)
  }
  return out.length === 0 ? 'none' : out.join(', ')
}

const signed = (v: number): string => `${v >= 0 ? '+' : ''}${v.toFixed(2)}`

/** BENCH_SOAK_SECONDS, default 600. */
function soakSeconds (env: NodeJS.ProcessEnv = process.env): number {
  const raw = env['BENCH_SOAK_SECONDS']
  if (raw === undefined || raw === '') return 600
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 10) {
    throw new Error(`BENCH_SOAK_SECONDS must be an integer of at least 10, got '${raw}'`)
  }
  return n
}

/** The least-squares slope of y over x. */
export function slope (points: ReadonlyArray<{ x: number, y: number }>): number {
  const n = points.length
  if (n < 2) return Number.NaN
  const mx = points.reduce((s, p) => s + p.x, 0) / n
  const my = points.reduce((s, p) => s + p.y, 0) / n
  let sxy = 0
  let sxx = 0
  for (const p of points) {
    sxy += (p.x - mx) * (p.y - my)
    sxx += (p.x - mx) ** 2
  }
  return sxy / sxx
}

export async function soak (ctx: ScenarioContext): Promise<ExtraResult> {
  const seconds = soakSeconds()
  const redis = await startBenchRedis(ctx, 'redis-soak')
  const client = new Redis(redis.url)
  let gw: KeygateServer | undefined
  let timer: NodeJS.Timeout | undefined
  let heapTimer: NodeJS.Timeout | undefined
  try {
    const headers = (await seedPersonalKeys(client, KEYS)).map((k) => `Bearer ${k.key}`)
    // (the default cache.max_entries holds every key with its users, roles and org)
    gw = await startKeygate(ctx, 'keygate-soak', { redisUrl: redis.url, logLevel: 'warn' })
    const pid = gw.pid as number
    const idleMiB = (rssKiB(pid) ?? Number.NaN) / 1024
    // every key once: the cache is full before the soak starts, however fast the machine
    const pool = new Pool(`http://127.0.0.1:${gw.port}`, { connections: CONNECTIONS })
    let filled = 0
    let fillBad = 0
    try {
      await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
        while (filled < headers.length) {
          const res = await pool.request({
            method: 'GET', path: BENCH_PATH, headers: { authorization: headers[filled++] as string }
          })
          await res.body.dump()
          if (res.statusCode !== 200) fillBad++
        }
      }))
    } finally {
      await pool.close()
    }
    const filledMiB = (rssKiB(pid) ?? Number.NaN) / 1024
    const samples: Array<{ x: number, y: number }> = []
    const heap: HeapSample[] = []
    const started = performance.now()
    const adminPort = gw.adminPort
    timer = setInterval(() => {
      const kib = rssKiB(pid)
      if (kib !== undefined) samples.push({ x: (performance.now() - started) / 60_000, y: kib / 1024 })
    }, SAMPLE_MS)
    heapTimer = setInterval(() => {
      const x = (performance.now() - started) / 60_000
      scrape(adminPort).then((text) => {
        heap.push({
          x,
          oldUsed: gaugeMiB(text, 'nodejs_heap_space_size_used_bytes\\{space="old"\\}'),
          heapUsed: gaugeMiB(text, 'nodejs_heap_size_used_bytes'),
          external: gaugeMiB(text, 'nodejs_external_memory_bytes')
        })
      }, () => {})
    }, HEAP_SAMPLE_MS)
    let next = 0
    const result = await runRound({
      url: `http://127.0.0.1:${gw.port}${BENCH_PATH}`,
      headers: {},
      headersFor: () => {
        const authorization = headers[next] as string
        next = (next + 1) % headers.length
        return { authorization }
      },
      expectedStatus: 200
    }, { connections: CONNECTIONS, pipelining: 1, durationSec: seconds })
    clearInterval(timer)
    clearInterval(heapTimer)
    const endScrape = await scrape(adminPort)
    const peakMiB = (peakRssKiB(pid) ?? Number.NaN) / 1024
    const minutes = seconds / 60
    const secondHalf = samples.filter((p) => p.x >= minutes / 2)
    const perMin = slope(secondHalf)
    const first = samples[0]?.y ?? Number.NaN
    const last = samples.at(-1)?.y ?? Number.NaN
    const lateHeap = heap.filter((p) => p.x >= minutes / 2)
    const heapSlope = (field: 'oldUsed' | 'heapUsed' | 'external'): string => signed(slope(minutely(lateHeap, field)))
    const oldAt = (p: HeapSample | undefined): string => p === undefined ? 'n/a' : p.oldUsed.toFixed(1)
    const failures: string[] = []
    const bad = result.unexpectedStatus + result.errors
    if (fillBad > 0) failures.push(`soak: ${fillBad} of the first pass's responses were not 200`)
    if (bad > 0) {
      failures.push(`soak: ${result.unexpectedStatus} responses were not 200 ` +
        `(${JSON.stringify(result.statusCounts)}), ${result.errors} errors (${result.timeouts} timeouts)`)
    }
    if (samples.length < 4) failures.push(`soak: only ${samples.length} RSS samples`)
    return {
      markdown: [
        `### Soak: ${seconds} s at full load on ${KEYS.toLocaleString('en')} cached keys`,
        '',
        '| RSS idle (MiB) | every key cached | first sample | last sample | peak (VmHWM) | slope over the second ' +
        'half (MiB/min) | requests | req/s |',
        '|---:|---:|---:|---:|---:|---:|---:|---:|',
        `| ${idleMiB.toFixed(1)} | ${filledMiB.toFixed(1)} | ${first.toFixed(1)} | ${last.toFixed(1)} | ` +
        `${peakMiB.toFixed(1)} | **${signed(perMin)}** | ${result.responses} | ${result.reqPerSec.toFixed(0)} |`,
        '',
        '| old space used, first / last sample (MiB) | slope over the second half, of each minute\'s lowest ' +
        '(MiB/min): old space used | heap used | outside the heap |',
        '|---:|---:|---:|---:|',
        `| ${oldAt(heap[0])} / ${oldAt(heap.at(-1))} | **${heapSlope('oldUsed')}** | ${heapSlope('heapUsed')} | ` +
        `${heapSlope('external')} |`,
        '',
        `Responses other than 200, by reason: ${refusals(endScrape)}.`,
        '',
        `VmRSS of the gateway every ${SAMPLE_MS / 1000} s under ${CONNECTIONS} connections, every key cached first, ` +
        `then the keys cycled in order (each used again every ${(KEYS / Math.max(result.reqPerSec, 1)).toFixed(0)} s ` +
        'or so); ' +
        `the slope is the least-squares fit over the samples of the second half (${secondHalf.length} samples), ` +
        'after the heap reached its working size.',
        ''
      ].join('\n'),
      failures
    }
  } finally {
    clearInterval(timer)
    clearInterval(heapTimer)
    await gw?.stop()
    client.disconnect()
    await redis.server.stop()
  }
}
