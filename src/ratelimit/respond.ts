/**
 * A rate-limit verdict's response headers, on every front end (src/http/verdict.ts):
 * `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds) on every
 * response to a limited request, allowed or not (on a proxied response they replace any
 * the upstream sent: proxy.ts); over a limit, `Retry-After` (whole seconds, at least 1)
 * with the 429 the decision (decide-request.ts) refused with.
 */
import type { Verdict } from './limiter.js'

/**
 * The headers of a verdict, as name -> value (undefined: none apply); also for a WebSocket upgrade (src/websocket/).
 */
export function rateLimitHeaders (v: Verdict | undefined): Record<string, string> | undefined {
  if (v === undefined || (!v.allowed && v.reason === 'rate_limit_unavailable')) return undefined
  const headers: Record<string, string> = {
    'ratelimit-limit': String(v.limit),
    'ratelimit-remaining': String(v.allowed ? v.remaining : 0),
    'ratelimit-reset': String(v.resetS)
  }
  if (!v.allowed) headers['retry-after'] = String(v.retryAfterS)
  return headers
}
