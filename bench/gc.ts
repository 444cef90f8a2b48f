// The garbage collector under load, by kind of request: each gateway pinned to its own
// core as in the table (Redis, the origin and the load on the other), run under
// `--trace-gc-nvp`, whose lines (V8's own accounting of every collection) are read from
// its stdout for the measured round only, after a warm-up: collections per 1,000
// requests, their pauses, the bytes each request leaves in the old generation (promoted
// by scavenges: what mark-compacts must then collect), and the collector's pause time
// per request, beside the gateway's CPU per request (/proc, all its threads) and its
// cache misses per request (the cold row's must be 1.00). Rows: a cached key (the
// headline), the cold keys (every request a cache miss and its share of one Redis round
// trip), the same with the log line, the per-key request log and webhooks off (the miss
// path alone), a rate-limited key (a cached key and one Lua call per request): whether a Redis
// round trip in the request path, or the heap the cold keys build, is what the collector
// pays for (docs/benchmarks.md, cold keys).
//
//   node bench/dist/gc.js [cached|cold|bare|rate-limited ...]   (rows whose name starts with one; all by default)
// Env: BENCH_ROUNDS / BENCH_DURATION / BENCH_WARMUP / BENCH_CONNECTIONS / BENCH_PIN (as the
// table's: interleaved rounds, each on a new gateway; the cold row's warm-up and round together
// must not reach BENCH_COLD_KEYS), GC_NODE_ARGS: more node flags for the gateways (e.g.
// `--max-semi-space-size=16`, or `--trace-gc-object-stats`), GC_KEEP=<dir>: keep each gateway's
// stdout (the GC trace) there.
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { coldKeys, nextColdAuthorization } from './cold-keys.js'
import { readConfig } from './config.js'
import { benchKeys, cacheMissesOf, startKeygate, type KeygateOptions } from './keygate.js'
import { runRound, type RoundResult } from './load.js'
import { applyPinning } from './pinning.js'
import { REDIS_ROW_TIMEOUT } from './scenarios.js'
import { nodeArgsFrom, stdoutInto, stopAll } from './process.js'
import { cpuSeconds } from './procfs.js'
import { BENCH_PATH, startOriginContext } from './servers.js'
import { median, percentile } from './stats.js'

interface Row {
  name: string
  options: KeygateOptions
  headersFor: () => Record<string, string>
}

/** One collection, from a `--trace-gc-nvp` line. */
interface Collection {
  kind: 'scavenge' | 'mark-compact'
  pauseMs: number
  promoted: number
}

const bearer = (key: string) => () => ({ authorization: `Bearer ${key}` })
const coldKey = (): Record<string, string> => ({ authorization: nextColdAuthorization() })
// (usage counting off in all three, as the table's cold-keys and rate-limit rows run)
const rows: Row[] = [
  { name: 'cached personal key', options: { usage: { enabled: false } }, headersFor: bearer(benchKeys.personal.key) },
  {
    name: 'cold keys (a miss per request)',
    options: { coldKeys: true, usage: { enabled: false } },
    headersFor: coldKey
  },
  {
    // the miss path alone: what the log line, the per-key request log and webhooks add to
    // the cold row's promotion is the difference between the two rows
    name: 'bare cold keys (a miss per request; log line, request log, webhooks off)',
    options: { coldKeys: true, usage: { enabled: false }, logLevel: 'warn', requestLog: false, webhooks: false },
    headersFor: coldKey
  },
  {
    name: 'rate-limited key (one Lua call per request)',
    options: { usage: { enabled: false }, redis: REDIS_ROW_TIMEOUT },
    headersFor: bearer(benchKeys.limited.key)
  }
]

/** The collections in a `--trace-gc-nvp` log (other lines skipped). */
function collections (text: string): Collection[] {
  const found: Collection[] = []
  for (const line of text.split('\n')) {
    const code = / gc=(s|mc) /.exec(line)?.[1]
    if (code === undefined) continue
    const field = (name: string): number => Number(new RegExp(` ${name}=([0-9.]+)`).exec(line)?.[1] ?? Number.NaN)
    const kind = code === 's' ? 'scavenge' : 'mark-compact'
    found.push({ kind, pauseMs: field('pause'), promoted: field('promoted') })
  }
  return found
}

/** One row's figures from one measured round. */
interface Figures {
  reqPerSec: number
  cpuUs: number
  missesPerReq: number
  p50Ms: number
  p99Ms: number
  scavengesPer1k: number
  scavengeP50Ms: number
  scavengeMaxMs: number
  compactsPer10k: number
  compactMaxMs: number
  promotedPerReq: number
  pauseUsPerReq: number
}

function figures (round: RoundResult, cpuSeconds: number, misses: number, seen: Collection[]): Figures {
  const n = round.responses
  const of = (kind: Collection['kind']): number[] =>
    seen.filter((c) => c.kind === kind).map((c) => c.pauseMs).sort((a, b) => a - b)
  const scavenges = of('scavenge')
  const compacts = of('mark-compact')
  return {
    reqPerSec: round.reqPerSec,
    cpuUs: cpuSeconds * 1e6 / n,
    missesPerReq: misses / n,
    p50Ms: round.p50Ms,
    p99Ms: round.p99Ms,
    scavengesPer1k: scavenges.length * 1000 / n,
    scavengeP50Ms: percentile(scavenges, 50),
    scavengeMaxMs: scavenges.at(-1) ?? Number.NaN,
    compactsPer10k: compacts.length * 10_000 / n,
    compactMaxMs: compacts.at(-1) ?? Number.NaN,
    promotedPerReq: seen.reduce((sum, c) => sum + (c.kind === 'scavenge' ? c.promoted : 0), 0) / n,
    pauseUsPerReq: seen.reduce((sum, c) => sum + c.pauseMs, 0) * 1000 / n
  }
}

/** A row of the report: each figure's median over the rounds, the noisiest with their range. */
function reportRow (name: string, rounds: Figures[]): string {
  const med = (f: (x: Figures) => number, digits: number): string => {
    const v = median(rounds.map(f).filter((x) => !Number.isNaN(x)))
    return Number.isNaN(v) ? '–' : v.toFixed(digits)
  }
  const ranged = (f: (x: Figures) => number, digits: number): string => {
    const all = rounds.map(f)
    return `${med(f, digits)} (${Math.min(...all).toFixed(digits)}–${Math.max(...all).toFixed(digits)})`
  }
  const cells = [
    name, med((x) => x.reqPerSec, 0), ranged((x) => x.cpuUs, 0), med((x) => x.missesPerReq, 2),
    med((x) => x.p50Ms, 2), ranged((x) => x.p99Ms, 1), med((x) => x.scavengesPer1k, 2),
    `${med((x) => x.scavengeP50Ms, 1)} / ${med((x) => x.scavengeMaxMs, 1)}`, med((x) => x.compactsPer10k, 2),
    med((x) => x.compactMaxMs, 1), ranged((x) => x.promotedPerReq, 0), ranged((x) => x.pauseUsPerReq, 1)
  ]
  return `| ${cells.join(' | ')} |\n`
}

const config = readConfig(process.env, [])
const pinning = applyPinning(config.pin)
const distDir = dirname(fileURLToPath(import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'keygate-gc-'))
/** GC_KEEP=<dir>: each gateway's whole stdout (its GC trace, warm-up included) is kept there as gc-<round>-<row>.log */
const keep = process.env['GC_KEEP']
if (keep !== undefined) mkdirSync(keep, { recursive: true })
const { origin, ctx } = await startOriginContext(distDir, pinning)
const load = { connections: config.connections, pipelining: config.pipelining }

/** One round of one row: a new gateway, its warm-up, then the measured round and its collections. */
async function measure (r: Row, name: string): Promise<Figures> {
  const stdout = join(dir, `${name}.log`)
  const gateway = await startKeygate(ctx, name, {
    ...r.options,
    launcher: {
      prefix: stdoutInto(stdout),
      nodeArgs: ['--trace-gc-nvp', ...nodeArgsFrom('GC_NODE_ARGS')],
      readyTimeoutMs: 60_000
    }
  })
  try {
    const target = { url: `http://127.0.0.1:${gateway.port}${BENCH_PATH}`, headers: {}, headersFor: r.headersFor }
    await runRound(target, { ...load, durationSec: config.warmupSec })
    const from = statSync(stdout).size
    const cpu = (): number => cpuSeconds(gateway.pid as number) ?? Number.NaN
    const misses = async (): Promise<number> => await cacheMissesOf(gateway.adminPort)
    const before = { cpu: cpu(), misses: await misses() }
    const round = await runRound(target, { ...load, durationSec: config.durationSec })
    const [cpuUsed, missed] = [cpu() - before.cpu, await misses() - before.misses]
    if (round.unexpectedStatus > 0 || round.errors > 0) {
      throw new Error(`${r.name}: ${round.unexpectedStatus} unexpected statuses, ${round.errors} errors`)
    }
    return figures(round, cpuUsed, missed, collections(readFileSync(stdout).subarray(from).toString('latin1')))
  } finally {
    await gateway.stop()
    if (keep === undefined) rmSync(stdout, { force: true })
    else renameSync(stdout, join(keep, `${name}.log`))
  }
}

try {
  coldKeys()
  const asked = process.argv.slice(2)
  const chosen = rows.filter((r) => asked.length === 0 || asked.some((a) => r.name.startsWith(a)))
  const measured = chosen.map(() => [] as Figures[])
  // rounds interleave the rows, in an order that rotates every round (the table's method)
  for (let round = 0; round < config.rounds; round++) {
    for (let k = 0; k < chosen.length; k++) {
      const i = (k + round) % chosen.length
      const r = chosen[i] as Row
      const f = await measure(r, `gc-${round}-${i}`)
      measured[i]?.push(f)
      process.stderr.write(`[gc] round ${round + 1}/${config.rounds} ${r.name}: ${f.cpuUs.toFixed(0)} µs/req, ` +
        `${f.promotedPerReq.toFixed(0)} B/req promoted, ${f.pauseUsPerReq.toFixed(1)} µs/req paused\n`)
    }
  }
  process.stdout.write(
    `pinning ${pinning.note}; ${config.rounds} interleaved rounds, each a new gateway: ${config.warmupSec} s of ` +
    `warm-up, then ${config.durationSec} s measured, ${config.connections} connections. Medians over the rounds ` +
    '(min–max)\n\n' +
    '| request | req/s | CPU µs/req | cache misses/req | p50 ms | p99 ms | scavenges per 1k req | ' +
    'scavenge pause p50 / max ms | mark-compacts per 10k req | mark-compact pause max ms | ' +
    'promoted bytes/req | GC pause µs/req |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
  )
  for (const [i, r] of chosen.entries()) process.stdout.write(reportRow(r.name, measured[i] as Figures[]))
} finally {
  await origin.stop()
  await stopAll()
  rmSync(dir, { recursive: true, force: true })
}
