// The garbage collector under load, by kind of request: each gateway pinned to its own
// core as in the table (Redis, the origin and the load on the other), run under
// `--trace-gc-nvp`, whose lines (V8's own accounting of every collection) are read from
// its stdout for the measured round only, after a warm-up: collections per 1,000
// requests, their pauses, the bytes each request leaves in the old generation (promoted
// by scavenges: what mark-compacts must then collect), and the collector's pause time
// per request, beside the gateway's CPU per request (/proc, all its threads) and its
// cache misses per request (the cold row's must be 1.00). Rows: a cached key (the
// headline), the cold keys (every request a cache miss and its share of one Redis round
// trip), a rate-limited key (a cached key and one Lua call per request): whether a Redis
// round trip in the request path, or the heap the cold keys build, is what the collector
// pays for (docs/benchmarks.md, cold keys).
//
//   node bench/dist/gc.js [cached|cold|rate-limited ...]   (rows whose name starts with one; all by default)
// Env: BENCH_DURATION / BENCH_WARMUP / BENCH_CONNECTIONS / BENCH_PIN (as the table's; the
// cold row's warm-up and round together must not reach BENCH_COLD_KEYS), GC_NODE_ARGS: more
// node flags for the gateways (e.g. `--max-semi-space-size=16`).
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { coldKeys, nextColdAuthorization } from './cold-keys.js'
import { readConfig } from './config.js'
import { benchKeys, cacheMissesOf, startKeygate, type KeygateOptions } from './keygate.js'
import { runRound, type RoundResult } from './load.js'
import { applyPinning } from './pinning.js'
import { REDIS_ROW_TIMEOUT } from './scenarios.js'
import { nodeArgsFrom, stopAll } from './process.js'
import { cpuSeconds } from './procfs.js'
import { BENCH_PATH, startOrigin } from './servers.js'
import { percentile } from './stats.js'
import type { ScenarioContext } from './types.js'

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
// (usage counting off in all three, as the table's cold-keys and rate-limit rows run)
const rows: Row[] = [
  { name: 'cached personal key', options: { usage: { enabled: false } }, headersFor: bearer(benchKeys.personal.key) },
  {
    name: 'cold keys (a miss per request)',
    options: { coldKeys: true, usage: { enabled: false } },
    headersFor: () => ({ authorization: nextColdAuthorization() })
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

/** What a measured round shows besides the collections: its load, the gateway's CPU and cache misses. */
interface Measured {
  round: RoundResult
  cpuSeconds: number
  misses: number
}

function row (name: string, { round, cpuSeconds, misses }: Measured, seen: Collection[]): string {
  const n = round.responses
  const of = (kind: Collection['kind']): number[] =>
    seen.filter((c) => c.kind === kind).map((c) => c.pauseMs).sort((a, b) => a - b)
  const scavenges = of('scavenge')
  const compacts = of('mark-compact')
  const promoted = seen.reduce((sum, c) => sum + (c.kind === 'scavenge' ? c.promoted : 0), 0)
  const paused = seen.reduce((sum, c) => sum + c.pauseMs, 0)
  const pauses = (p: number[]): string =>
    p.length === 0 ? '–' : `${percentile(p, 50).toFixed(1)} / ${(p.at(-1) as number).toFixed(1)}`
  const cells = [
    name, round.reqPerSec.toFixed(0), (cpuSeconds * 1e6 / n).toFixed(0), (misses / n).toFixed(2),
    round.p50Ms.toFixed(2), round.p99Ms.toFixed(2),
    (scavenges.length * 1000 / n).toFixed(2), pauses(scavenges), (compacts.length * 10_000 / n).toFixed(2),
    pauses(compacts), (promoted / n).toFixed(0), (paused * 1000 / n).toFixed(1)
  ]
  return `| ${cells.join(' | ')} |\n`
}

const config = readConfig(process.env, [])
const pinning = applyPinning(config.pin)
const distDir = dirname(fileURLToPath(import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'keygate-gc-'))
const origin = await startOrigin(distDir, pinning.auxCpus)
const ctx: ScenarioContext = {
  originUrl: `http://127.0.0.1:${origin.port}`,
  originTargets: origin.targets,
  serverCpus: pinning.serverCpus,
  auxCpus: pinning.auxCpus,
  distDir
}
const load = { connections: config.connections, pipelining: config.pipelining }
try {
  coldKeys()
  process.stdout.write(
    `pinning ${pinning.note}; ${config.warmupSec} s of warm-up, then ${config.durationSec} s measured, ` +
    `${config.connections} connections\n\n` +
    '| request | req/s | CPU µs/req | cache misses/req | p50 ms | p99 ms | scavenges per 1k req | ' +
    'scavenge pause p50 / max ms | mark-compacts per 10k req | mark-compact pause p50 / max ms | ' +
    'promoted bytes/req | GC pause µs/req |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
  )
  const asked = process.argv.slice(2)
  for (const [i, r] of rows.entries()) {
    if (asked.length > 0 && !asked.some((a) => r.name.startsWith(a))) continue
    const stdout = join(dir, `gateway-${i}.log`)
    // (sh runs `node <args> <script>...`: node is its $1; its stdout, log lines and GC lines, to the file)
    const gateway = await startKeygate(ctx, `gc-${i}`, {
      ...r.options,
      launcher: {
        prefix: ['sh', '-c', `node="$1"; shift; exec "$node" "$@" > '${stdout}'`, 'sh'],
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
      const measured = { round, cpuSeconds: cpu() - before.cpu, misses: await misses() - before.misses }
      if (round.unexpectedStatus > 0 || round.errors > 0) {
        throw new Error(`${r.name}: ${round.unexpectedStatus} unexpected statuses, ${round.errors} errors`)
      }
      const text = readFileSync(stdout).subarray(from).toString('latin1')
      process.stdout.write(row(r.name, measured, collections(text)))
    } finally {
      await gateway.stop()
    }
  }
} finally {
  await origin.stop()
  await stopAll()
  rmSync(dir, { recursive: true, force: true })
}
