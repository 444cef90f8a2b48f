/**
 * The cache's times, from the configuration, in one place: how long an entry is fresh
 * (`cache.ttl_ms`, `negative_ttl_ms`), how long a stale one may be served while Redis
 * is down (`stale_if_error_s`), and what follows from the TTL: how often push
 * invalidation's channel is pinged (twice per TTL, so a silent channel is trusted for
 * at most a TTL) and how often open WebSockets are decided again when it is down.
 */
import type { Config } from '../config/schema.js'

export interface CacheTimings {
  ttlMs: number
  negativeTtlMs: number
  staleIfErrorMs: number
  /** the invalidation channel's ping interval (src/cache/invalidation.ts) */
  verifyEveryMs: number
  /** open WebSockets are decided again this often without push invalidation (src/websocket/) */
  sweepEveryMs: number
}

export function cacheTimings (c: Config['cache']): CacheTimings {
  return {
    ttlMs: c.ttl_ms,
    negativeTtlMs: c.negative_ttl_ms,
    staleIfErrorMs: c.stale_if_error_s * 1000,
    verifyEveryMs: Math.min(1000, Math.max(50, Math.floor(c.ttl_ms / 2))),
    sweepEveryMs: Math.max(100, c.ttl_ms)
  }
}

/** No cache (`keygate check`): nothing is fresh, nothing stale is served. */
export const NO_CACHE_TIMINGS: CacheTimings = Object.freeze({
  ttlMs: 0, negativeTtlMs: 0, staleIfErrorMs: 0, verifyEveryMs: 50, sweepEveryMs: 100
})
