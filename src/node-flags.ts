/**
 * How keygate sizes V8's heap: a gateway's memory should follow its cache bound, not
 * V8's appetite. Measured with 100,000 cached keys (docs/cache.md, Memory): peak RSS
 * 190-240 MiB with V8's defaults, about 140 MiB with both settings below.
 *
 * - The young generation: V8 grows each of its two semi-spaces to 16 MiB under load,
 *   32 MiB of RSS that holds only short-lived garbage. keygate's launchers (the `keygate`
 *   executable, `npm start`, the Dockerfile, the bench) start node with NODE_FLAGS,
 *   which caps them at 8 MiB; `--workers` passes them on to its workers. Node reads the
 *   flag only at start-up, so it must be on the command line (or in NODE_OPTIONS).
 *   Cost: scavenges twice as often; their time grew from about 2.7 to 3.2-4.2 µs a
 *   request under full load.
 * - The old generation: after each full collection V8 lets it grow to up to four times
 *   what survived before it collects again; a gateway's survivors are mostly its cache,
 *   so that room was most of the peak. `serve` caps the growth at 30% at run time
 *   (V8 reads this flag at each collection): full collections come sooner (4 instead of
 *   1 in 12 s of full load, about 10 ms each). An operator who starts node with their
 *   own `--heap-growing-percent` keeps it.
 */
import { setFlagsFromString } from 'node:v8'

export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8']

export const HEAP_GROWING_PERCENT = 30

const flagName = (arg: string): string => (arg.split('=', 1)[0] as string).replaceAll('_', '-')

/** node's arguments with each of NODE_FLAGS added, unless the same flag is already given. */
export function withNodeFlags (execArgv: readonly string[]): string[] {
  const given = new Set(execArgv.map(flagName))
  return [...execArgv, ...NODE_FLAGS.filter((flag) => !given.has(flagName(flag)))]
}

/** Caps the old generation's growth between full collections; false when node was given its own value. */
export function boundHeapGrowth (execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((arg) => flagName(arg) === '--heap-growing-percent')) return false
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
  return true
}
