/** The in-process cache, read from its own counters at scrape time. */
import type { Registrar } from './registrar.js'

/** What the cache exposes to the metrics (plain counters, read at scrape time). */
export interface CacheStats {
  hits: number            // decisions served from the cache
  misses: number          // decisions that needed a Redis round trip
  evictions: number       // entries evicted by the size bound
  invalidations: number   // invalidation messages applied (push invalidation)
  entries: number         // entries now held
  trackingUp: boolean     // the invalidation (tracking) connection is established
  trackingSince: number   // epoch ms when it was (re-)established, 0 when down
}

export function cacheMetrics (r: Registrar, stats: () => CacheStats, now: () => number): void {
  r.total('keygate_cache_hits_total', 'Decisions served from the in-process cache.', () => stats().hits)
  r.total('keygate_cache_misses_total', 'Decisions that needed a Redis round trip.', () => stats().misses)
  r.total('keygate_cache_evictions_total',
    'Cache entries evicted by the size bounds (cache.max_entries, cache.negative_max_entries).',
    () => stats().evictions)
  r.total('keygate_cache_invalidations_total',
    'Invalidation messages applied to the cache (push invalidation).',
    () => stats().invalidations)
  r.level('keygate_cache_entries',
    'Entries now held by the cache (key, user, role and org records, and negative entries).', 'sum',
    () => stats().entries)
  r.level('keygate_cache_tracking_up',
    'Whether the invalidation (tracking) connection is established (1) or not (0).', 'min',
    () => stats().trackingUp ? 1 : 0)
  r.level('keygate_cache_tracking_connection_age_seconds',
    'Seconds since the invalidation (tracking) connection was (re-)established; 0 while it is down.', 'min',
    () => {
      const s = stats()
      return s.trackingUp && s.trackingSince > 0 ? Math.max(0, now() - s.trackingSince) / 1000 : 0
    })
}
