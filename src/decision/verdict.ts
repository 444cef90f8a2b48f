/**
 * What the decision answers (decide-request.ts): allowed, with who is calling and the
 * rule that let them, or refused, with the error code, the log line's reason and the
 * RFC 6750 challenge. Protocol-neutral: each front end maps it to its transport.
 */
import type { ErrorCode, Reason } from '../errors.js'
import type { Identity } from './identity.js'
import type { Route } from './route-table.js'
import type { CompiledRule } from './match-rule.js'
import type { Verdict as RateLimitVerdict } from '../ratelimit/limiter.js'
import type { QuotaVerdict } from '../quota/meter.js'

/** A request the shadow rules (shadow-rules.ts) answer otherwise: the shadow rule (index, or `none`), both outcomes. */
export interface ShadowNote {
  readonly rule: string
  /** `allow`, or the live refusal's reason at authorization */
  readonly live: string
  /** `allow`, or the reason the shadow rules would refuse with */
  readonly shadow: string
}

/** Allowed with a key, allowed without one by a public rule (public-access.ts), or refused. */
export type Verdict = Allowed | Anonymous | Refused

export interface Allowed {
  ok: true
  anonymous?: undefined
  identity: Identity
  rule: CompiledRule
  /** the strictest rate limit that applies, for the RateLimit-* headers; none: undefined */
  rateLimit?: RateLimitVerdict
  /** the quota and credits that apply, for the RateLimit-Policy and RateLimit headers; none: undefined */
  quota?: QuotaVerdict
  /** the key's records were read from Redis (a cache miss) rather than the cache */
  fromRedis?: boolean
  /** the shadow rules would have answered otherwise (shadow-rules.ts); undefined: they agree, or there are none */
  shadow?: ShadowNote
}

/** A request without a credential, allowed by a public rule (public-access.ts): no identity. */
export interface Anonymous {
  ok: true
  anonymous: true
  identity: undefined
  rule: CompiledRule
  /** `rate_limits.anonymous`, for the RateLimit-* headers */
  rateLimit?: RateLimitVerdict
  quota?: undefined
  fromRedis?: undefined
  shadow?: undefined
}

export interface Refused {
  ok: false
  code: ErrorCode
  reason: Reason
  /** the `WWW-Authenticate` value (401 and 403 only) */
  challenge: string | undefined
  /** the key id, once the key's format was good (for the log line) */
  keyId: string | undefined
  /** who was calling, when it was a valid key that the rule refused */
  identity?: Identity
  /** the rule that matched, if one did */
  rule?: CompiledRule
  /** a 429: the limit that refused, for the RateLimit-* headers and Retry-After */
  rateLimit?: RateLimitVerdict
  /** a 429 quota_exceeded: the allowances, for the RateLimit-Policy and RateLimit headers and Retry-After */
  quota?: QuotaVerdict
  /** the key's records were read from Redis (a cache miss); undefined: no key was looked up */
  fromRedis?: boolean
  /** the shadow rules would have answered otherwise (shadow-rules.ts) */
  shadow?: ShadowNote
}

/**
 * An authenticated request on its way through the stages after authentication
 * (stages/): the allowed verdict being made. The authorize stage sets the rule it
 * matched, the rate-limit stage the limit for the headers; it is the verdict itself
 * once every stage let it through, and allowed only with a rule.
 */
export interface Passing extends Omit<Allowed, 'rule'> {
  rule: CompiledRule | undefined
  /** the route the request is under; undefined when the front end names none (a test key is then refused) */
  route: Route | undefined
}

/** A refusal of an authenticated request: who was calling, and the rule when one matched. */
export function refusal (
  p: Passing,
  code: ErrorCode,
  reason: Reason,
  challenge: string | undefined,
  rateLimit?: RateLimitVerdict,
  quota?: QuotaVerdict
): Refused {
  const refused: Refused = {
    ok: false,
    code,
    reason,
    challenge,
    keyId: p.identity.keyId,
    identity: p.identity,
    fromRedis: p.fromRedis
  }
  if (p.rule !== undefined) refused.rule = p.rule
  if (rateLimit !== undefined) refused.rateLimit = rateLimit
  if (quota !== undefined) refused.quota = quota
  return refused
}
