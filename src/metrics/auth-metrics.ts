/** The authentication decision: from the cache (counted) or from Redis (counted and timed). */
import type { Registrar } from './registrar.js'
import { HistogramTable, type Labels } from './series.js'

/** Recorded by the gate (gate.ts). */
export interface AuthMeter {
  /** a decision whose records were all cached: synchronous, counted, not timed */
  fromCache: () => void
  /** a decision that waited for Redis: `ms` from the lookup to the records (or the failure) */
  fromRedis: (ms: number) => void
}

/** A Redis round trip: ~0.1 ms on a LAN; `redis.command_timeout_ms` (default 0.5 s) bounds it. */
const AUTH_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]

export function authMetrics (r: Registrar): { meter: AuthMeter, labelSets: () => number } {
  let decidedFromCache = 0
  let decidedFromRedis = 0
  const fromCacheLabels: Labels = { source: 'cache' }
  const fromRedisLabels: Labels = { source: 'redis' }
  r.counter({
    name: 'keygate_auth_decisions_total',
    help: 'Authentication decisions that needed records, by where the records came from: "cache" (synchronous) or ' +
      '"redis" (one round trip, timed in keygate_auth_decision_duration_seconds).',
    labelNames: ['source'],
    collect () {
      this.reset()
      this.inc(fromCacheLabels, decidedFromCache)
      this.inc(fromRedisLabels, decidedFromRedis)
    }
  })
  const duration = r.histogram(new HistogramTable(
    'keygate_auth_decision_duration_seconds',
    'Authentication decisions that waited for Redis: from the registry lookup to its records (or its failure). ' +
    'Decisions from the cache are counted, not timed.',
    AUTH_BUCKETS,
    () => ({})
  ))
  duration.open(0)
  const meter: AuthMeter = {
    fromCache () { decidedFromCache++ },
    fromRedis (ms) {
      decidedFromRedis++
      duration.observe(0, ms)
    }
  }
  return { meter, labelSets: () => duration.size }
}
