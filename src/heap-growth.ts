/**
 * How far V8 lets the old generation grow between full collections. After each one,
 * V8 lets it grow to up to four times what survived before collecting again; a
 * gateway's survivors are mostly its cache, so with 100,000 cached keys that room is
 * much of the peak RSS (docs/cache.md, Memory). `serve` caps the growth at 30% at run
 * time (V8 reads this flag at each collection): full collections come sooner (under full load with a warm cache: 4
 * instead of 1 in 12 s, about 10 ms each). Node admits the flag on its command line
 * only, never in NODE_OPTIONS; an operator who passes it there keeps their value.
 *
 * The young generation is not set here: V8 reads its size when the heap is made, so
 * only node's options can; the Docker image caps it with
 * `NODE_OPTIONS=--max-semi-space-size=8` (docs/cache.md, Memory).
 */
import { setFlagsFromString } from 'node:v8'

export const HEAP_GROWING_PERCENT = 30

/** Caps the old generation's growth between full collections; false when node was given its own value. */
export function boundHeapGrowth (execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((arg) => /^--heap[-_]growing[-_]percent(=|$)/.test(arg))) return false
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`)
  return true
}
