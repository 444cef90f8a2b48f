/**
 * Property-based tests with fast-check: one seed and a bounded number of runs in CI, more
 * runs and a seed of one's own in `npm run fuzz` (docs/security.md, "Fuzzing").
 *
 *   KEYGATE_FUZZ_SEED   the seed (an integer); `random` picks one. Default 39, so CI is
 *                       repeatable.
 *   KEYGATE_FUZZ_RUNS   the runs of every property, instead of each one's CI count.
 *   KEYGATE_FUZZ_PATH   with the seed, replays one failing case (fast-check's `path`).
 *
 * A failure names the property, the seed, the path and the shrunk counterexample, and
 * the command that replays it.
 */
import fc from 'fast-check'
import type { Test } from 'tap'

const DEFAULT_SEED = 39

function seedFromEnv (): number {
  const text = process.env.KEYGATE_FUZZ_SEED ?? ''
  if (text === '') return DEFAULT_SEED
  if (text === 'random') return Math.floor(Math.random() * 0x7fffffff)
  const seed = Number(text)
  if (!Number.isSafeInteger(seed)) {
    throw new Error(`KEYGATE_FUZZ_SEED must be an integer or "random", not ${JSON.stringify(text)}`)
  }
  return seed
}

/** the seed of this process's properties (one per process, so a file's failure is replayed whole) */
export const FUZZ_SEED = seedFromEnv()

/** `ciRuns`, unless KEYGATE_FUZZ_RUNS says how many */
export function fuzzRuns (ciRuns: number): number {
  const text = process.env.KEYGATE_FUZZ_RUNS ?? ''
  const runs = text === '' ? ciRuns : Number(text)
  if (!Number.isSafeInteger(runs) || runs < 1) {
    throw new Error(`KEYGATE_FUZZ_RUNS must be a positive integer, not ${JSON.stringify(text)}`)
  }
  return runs
}

/** A property's failure, thrown by its predicate: what was expected, in words. */
export function expect (holds: boolean, what: string): asserts holds {
  if (!holds) throw new Error(what)
}

/**
 * Runs the property `predicate` over `arb` (ciRuns runs in CI) as one tap assertion.
 * The predicate throws (expect()) when the property does not hold.
 */
export async function checkProperty<T> (t: Test, name: string, arb: fc.Arbitrary<T>, ciRuns: number,
  predicate: (value: T) => Promise<void>): Promise<void> {
  const runs = fuzzRuns(ciRuns)
  const path = process.env.KEYGATE_FUZZ_PATH
  const details = await fc.check(fc.asyncProperty(arb, predicate), {
    seed: FUZZ_SEED,
    numRuns: runs,
    ...(path !== undefined && path !== '' ? { path } : {})
  })
  if (!details.failed) {
    t.pass(`${name}: ${details.numRuns} runs (seed ${FUZZ_SEED})`)
    return
  }
  const replay = `KEYGATE_FUZZ_SEED=${details.seed} KEYGATE_FUZZ_PATH=${details.counterexamplePath ?? ''} ` +
    'npx tap <this file>'
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)
  t.fail(`${name}: ${error}`, {
    seed: details.seed,
    path: details.counterexamplePath,
    counterexample: fc.stringify(details.counterexample),
    shrunk: details.numShrinks,
    replay
  })
}
