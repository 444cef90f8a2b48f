/**
 * rate limits: every limit that applies to the identity (src/ratelimit/limiter.ts),
 * the strictest deciding: 429 with the limit's values for the RateLimit-* headers and
 * Retry-After, 503 when Redis is down and `rate_limits.on_error` is deny. An allowed
 * request carries the strictest limit's values on its verdict. Without a limiter (the
 * WebSocket re-decision), no limit applies. Synchronous when no limit applies or a
 * bucket is blocked in this process; one Redis round trip otherwise.
 */
import type { Verdict as RateLimitVerdict } from '../../ratelimit/limiter.js'
import type { DecisionStage } from './stage.js'
import { refusal, type Passing, type Refused } from '../verdict.js'

function limited (p: Passing, v: RateLimitVerdict): Refused | undefined {
  if (v.allowed) {
    p.rateLimit = v
    return undefined
  }
  if (v.reason === 'rate_limit_unavailable') return refusal(p, 'service_unavailable', v.reason, undefined)
  return refusal(p, 'rate_limited', v.reason, undefined, v)
}

export const rateLimits: DecisionStage = {
  name: 'rate limits',
  answer: '429',
  files: ['src/decision/stages/rate-limits.ts', 'src/ratelimit/'],
  build: ({ limiter }) => {
    if (limiter === undefined) return () => undefined
    return (p, _method, _path, _client, now) => {
      const v = limiter.check(p.identity, now)
      if (v === undefined) return undefined
      if (!(v instanceof Promise)) return limited(p, v)
      return v.then((answer) => answer === undefined ? undefined : limited(p, answer))
    }
  }
}
