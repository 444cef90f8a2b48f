/**
 * The per-key usage counter's own health (src/usage/counter.ts, docs/usage.md):
 * its writes to Redis (how many, how long, how many keys each, which failed) and the
 * counts it lost. Never a key id: the counts per key are in Redis, not here.
 */
import type { Registrar } from './registrar.js'
import { CountTable, HistogramTable } from './series.js'

/**
 * Why counted requests were never written: `behind`, the writes fell behind (more than
 * twice `usage.max_keys` keys waited for a write in progress, and the oldest waiting
 * batch was dropped); `failed`, their write failed (Redis unreachable, a timeout, an
 * error reply).
 */
export const USAGE_DROP_REASONS = ['behind', 'failed'] as const
export type UsageDropReason = typeof USAGE_DROP_REASONS[number]

/** Recorded by the usage counter, off the request path (once per write or batch). */
export interface UsageMeter {
  /** a write of the counts of `keys` keys (and of their orgs), finished after `ms`; `ok` false: it failed */
  flushed: (ms: number, keys: number, ok: boolean) => void
  /** the counts of `requests` requests were never written */
  dropped: (requests: number, reason: UsageDropReason) => void
  /** a batch reached usage.max_keys keys and was handed to the writer before the interval's end */
  full: () => void
}

const FLUSH_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
const KEY_BUCKETS = [1, 10, 100, 1000, 10_000, 100_000, 1_000_000]

/** `held`: distinct keys whose counts are in memory, not yet written (read at scrape time). */
export function usageMetrics (r: Registrar, held: () => number): UsageMeter {
  let flushes = 0
  let errors = 0
  let full = 0
  r.total('keygate_usage_flushes_total',
    'Writes of the per-key usage counts to Redis (one every usage.flush_ms with something to write, and one per ' +
    'batch that reached usage.max_keys), failed ones included.',
    () => flushes)
  r.total('keygate_usage_flush_errors_total',
    'Writes of the usage counts that failed (Redis unreachable, a timeout, an error reply): their counts are lost ' +
    '(keygate_usage_dropped_total{reason="failed"}).',
    () => errors)
  r.total('keygate_usage_full_batches_total',
    'Batches of usage counts that reached usage.max_keys distinct keys and were written before the interval ended.',
    () => full)
  r.level('keygate_usage_keys_held',
    'Distinct keys whose usage counts are held in memory waiting for a write (the batch being counted and those ' +
    'waiting; at most three times usage.max_keys). The batch being written is not included.', 'sum',
    held)
  const duration = r.histogram(new HistogramTable(
    'keygate_usage_flush_duration_seconds',
    'Writes of the usage counts to Redis, from the first command sent to the last reply (the org reads for keys ' +
    'whose decision did not name it included).',
    FLUSH_BUCKETS,
    () => ({})
  ))
  duration.open(0)
  const keys = r.histogram(new HistogramTable(
    'keygate_usage_flush_keys',
    'Distinct keys whose counts one write of the usage counts carried (their orgs\' sums not included).',
    KEY_BUCKETS,
    () => ({}),
    1
  ))
  keys.open(0)
  const dropped = new CountTable((slot) => ({ reason: USAGE_DROP_REASONS[slot] as string }))
  for (let slot = 0; slot < USAGE_DROP_REASONS.length; slot++) dropped.add(slot, 0)
  r.counter({
    name: 'keygate_usage_dropped_total',
    help: 'Requests counted for per-key usage whose counts were never written, by reason: behind (the writes fell ' +
      'behind: more than twice usage.max_keys keys waited, and the oldest waiting batch was dropped), failed (their ' +
      'write failed).',
    labelNames: ['reason'],
    collect () { dropped.exportTo(this) }
  })
  return {
    flushed (ms, n, ok) {
      flushes++
      if (!ok) errors++
      duration.observe(0, ms)
      keys.observe(0, n)
    },
    dropped (requests, reason) { dropped.add(USAGE_DROP_REASONS.indexOf(reason), requests) },
    full () { full++ }
  }
}
