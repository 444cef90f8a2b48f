/**
 * quota: the quota and credits of the key and of its org (src/quota/meter.ts), after the
 * rate limits: not enough left for the rule's `cost`, 429 `quota_exceeded` with the
 * allowances for the RateLimit-Policy / RateLimit headers and Retry-After to the next
 * refill when one is due; 503 when Redis is down and `quota.on_error` is deny. An
 * allowed request carries the allowances on its verdict. Synchronous, and free, for a
 * key with no allowance; one share of a batched Redis script call otherwise.
 */
import type { QuotaVerdict } from '../../quota/meter.js'
import type { DecisionStage } from './stage.js'
import { refusal, type Passing, type Refused } from '../verdict.js'

function metered (p: Passing, v: QuotaVerdict): Refused | undefined {
  if (v.allowed) {
    p.quota = v
    return undefined
  }
  if (v.reason === 'quota_unavailable') return refusal(p, 'service_unavailable', v.reason, undefined, p.rateLimit)
  return refusal(p, 'quota_exceeded', v.reason, undefined, p.rateLimit, v)
}

export const quota: DecisionStage = {
  name: 'quota',
  answer: '429',
  files: ['src/decision/stages/quota.ts', 'src/quota/'],
  build: ({ quota: meter }) => {
    if (meter === undefined) return () => undefined
    return (p, _method, _path, _client, now) => {
      // (authorize set the rule; without one the decision refuses anyway)
      if (p.rule === undefined) return undefined
      const v = meter.check(p.identity, p.rule.cost, now)
      if (v === undefined) return undefined
      if (!(v instanceof Promise)) return metered(p, v)
      return v.then((answer) => answer === undefined ? undefined : metered(p, answer))
    }
  }
}
