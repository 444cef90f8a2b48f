// Benchmark settings from the environment and argv, validated up front.

export interface BenchConfig {
  /** seconds per measured round */
  durationSec: number
  rounds: number
  /** seconds of the uncounted warm-up round of each server process */
  warmupSec: number
  /** each round measures a new server process (after its own warm-up); BENCH_FRESH=0: one process per scenario */
  freshProcesses: boolean
  connections: number
  pipelining: number
  pin: boolean
  /** Only run scenarios whose name contains this, or one of its `|`-separated parts (the baseline always runs). */
  filter: string | undefined
  /** Write JSON results here (--json). */
  jsonOut: string | undefined
  /**
   * The measurements beside the table (bench/extras.ts, bench/instructions.ts) to run:
   * every one but the opt-in ones by default; BENCH_EXTRAS=0 skips them,
   * BENCH_EXTRAS=sharedCore,memory names some.
   */
  extras: (name: string) => boolean
}

function positive (env: NodeJS.ProcessEnv, name: string, fallback: number, integer: boolean): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
    throw new Error(`${name} must be a positive ${integer ? 'integer' : 'number'}, got '${raw}'`)
  }
  return value
}

export function readConfig (env: NodeJS.ProcessEnv, argv: readonly string[]): BenchConfig {
  const unknown = argv.filter((arg) => arg !== '--json')
  if (unknown.length > 0) throw new Error(`unknown argument(s): ${unknown.join(' ')} (only --json is supported)`)
  const json = argv.includes('--json')
  const out = env['BENCH_OUT']
  if (json && (out === undefined || out === '')) throw new Error('--json needs the output path in BENCH_OUT')
  return {
    durationSec: positive(env, 'BENCH_DURATION', 5, false),
    rounds: positive(env, 'BENCH_ROUNDS', 3, true),
    warmupSec: positive(env, 'BENCH_WARMUP', 5, false),
    freshProcesses: env['BENCH_FRESH'] !== '0',
    connections: positive(env, 'BENCH_CONNECTIONS', 50, true),
    pipelining: 1,
    pin: env['BENCH_PIN'] !== '0',
    filter: env['BENCH_FILTER'] === '' ? undefined : env['BENCH_FILTER'],
    jsonOut: json ? out : undefined,
    extras: extrasFrom(env['BENCH_EXTRAS'])
  }
}

/**
 * extras that run only when named: `instructions` needs valgrind and takes ~22 minutes; `usageFlush` measures Redis,
 * not keygate's request path; `soak` takes BENCH_SOAK_SECONDS (10 minutes)
 */
const OPT_IN = new Set(['instructions', 'usageFlush', 'soak'])

function extrasFrom (raw: string | undefined): (name: string) => boolean {
  if (raw === undefined || raw === '' || raw === '1') return (name) => !OPT_IN.has(name)
  if (raw === '0') return () => false
  const names = new Set(raw.split(',').map((n) => n.trim()))
  return (name) => names.has(name)
}

/** Environment variables that change the run, for the "exact command" line. */
export const KNOBS = [
  'BENCH_DURATION', 'BENCH_ROUNDS', 'BENCH_WARMUP', 'BENCH_FRESH', 'BENCH_CONNECTIONS', 'BENCH_PIN', 'BENCH_FILTER',
  'BENCH_OUT', 'BENCH_EXTRAS', 'BENCH_SOAK_SECONDS'
] as const
