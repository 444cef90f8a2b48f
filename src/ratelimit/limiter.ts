/**
 * The rate limits stage (docs/rate-limits.md): the limits that apply to an
 * authorized identity, checked together; the strictest decides.
 *
 *   key    the key record's `rate_limit`, else `rate_limits.default`   a bucket per key
 *   role   the role record's `rate_limit`                             a bucket per key acting with it
 *   org    the org record's `rate_limit` (`keygate:org:<org>`)        one bucket for the whole org
 *   identity  the identity record's `rate_limit` (docs/identities.md)  one bucket for every key of the identity
 *
 * The limits come from the records the cache already holds (parsed once, src/config/rate-limit.ts), so
 * `check` is synchronous when nothing applies (no cost at all), when a limit is
 * malformed (nothing allowed), and when a bucket is blocked in this process
 * (blocked.ts); otherwise it is one Redis round trip for all buckets (script.ts).
 * It never rejects: a failed script is `rate_limits.on_error`'s to decide.
 * Algorithm and guarantees: docs/rate-limits.md.
 */
import type { LimitLevel, RateLimitMeter } from '../metrics/ratelimit-metrics.js'
import type { BlockedBuckets } from './blocked.js'
import { bucketNames } from './buckets.js'
import { MALFORMED, type RateLimit, type RecordLimit } from '../config/rate-limit.js'
import type { BucketResult, RateLimitScript, TakeResult } from './script.js'

/** What the limiter reads of an authorized identity (decision/decide.ts's Identity). */
export interface LimitedIdentity {
  keyId: string
  org: string
  role: string
  keyLimit?: RecordLimit
  roleLimit?: RecordLimit
  orgLimit?: RecordLimit
  /** a BOT key's identity, and its limit */
  identityId?: string | undefined
  identityLimit?: RecordLimit
}

/**
 * Allowed (with the header values), or refused, with the log line's reason: over a
 * limit, a malformed limit, or Redis unreachable under `on_error: deny` (no headers).
 */
export type Verdict =
  | { allowed: true, limit: number, remaining: number, resetS: number }
  | {
    allowed: false,
    reason: 'rate_limited' | 'invalid_record',
    limit: number,
    remaining: 0,
    resetS: number,
    retryAfterS: number
  }
  | { allowed: false, reason: 'rate_limit_unavailable' }

/** No limit applies (or Redis is unreachable under `on_error: allow`): nothing to say. */
export type Check = Verdict | undefined | Promise<Verdict | undefined>

export interface Limiter {
  check: (identity: LimitedIdentity, now: number) => Check
}

export interface LimiterOptions {
  script: RateLimitScript
  blocked: BlockedBuckets
  meter: RateLimitMeter
  /** where the buckets live (`keygate:ratelimit:`, redis-keys.ts) */
  bucketPrefix: string
  /** `rate_limits.default`: for keys without a `rate_limit` of their own */
  defaultLimit: RateLimit | undefined
  onError: 'allow' | 'deny'
}

interface Bucket {
  level: LimitLevel
  name: string
  limit: RateLimit
}

/** A bucket and what the script said of it. */
type Row = { bucket: Bucket } & BucketResult

/** A malformed limit allows nothing; its client is told to come back in a minute. */
const MALFORMED_RETRY_S = 60
const MALFORMED_VERDICT: Verdict = Object.freeze({
  allowed: false,
  reason: 'invalid_record',
  limit: 0,
  remaining: 0,
  resetS: MALFORMED_RETRY_S,
  retryAfterS: MALFORMED_RETRY_S
})
const UNAVAILABLE: Verdict = Object.freeze({ allowed: false, reason: 'rate_limit_unavailable' })

/** The limits that apply to an identity, by level: the key's own (else the default), its role's, its org's. */
export interface ApplicableLimits {
  key: RecordLimit | undefined
  role: RecordLimit | undefined
  org: RecordLimit | undefined
  identity: RecordLimit | undefined
}

export function applicableLimits (id: LimitedIdentity, defaultLimit: RateLimit | undefined): ApplicableLimits {
  return {
    key: id.keyLimit ?? defaultLimit,
    role: id.roleLimit,
    org: id.orgLimit,
    identity: id.identityId === undefined ? undefined : id.identityLimit
  }
}

/** The level of the first malformed limit (a malformed limit allows nothing), or undefined. */
export function malformedLevel (l: ApplicableLimits): LimitLevel | undefined {
  if (l.key === MALFORMED) return 'key'
  if (l.role === MALFORMED) return 'role'
  if (l.org === MALFORMED) return 'org'
  return l.identity === MALFORMED ? 'identity' : undefined
}

/**
 * The limits shown, never counted (`keygate check`): a malformed limit refuses as the
 * limiter does; any other lets the request through, without touching Redis.
 */
export function previewLimiter (defaultLimit: RateLimit | undefined): Limiter {
  return {
    check: (id) => malformedLevel(applicableLimits(id, defaultLimit)) === undefined ? undefined : MALFORMED_VERDICT
  }
}

export function createLimiter (o: LimiterOptions): Limiter {
  const names = bucketNames(o.bucketPrefix)

  function buckets (
    id: LimitedIdentity,
    key: RateLimit | undefined,
    role: RateLimit | undefined,
    org: RateLimit | undefined,
    identity: RateLimit | undefined
  ): Bucket[] {
    const out: Bucket[] = []
    if (key !== undefined) out.push({ level: 'key', name: names.key(id.keyId, key), limit: key })
    if (role !== undefined) out.push({ level: 'role', name: names.role(id.role, id.keyId, role), limit: role })
    if (org !== undefined) out.push({ level: 'org', name: names.org(id.org, org), limit: org })
    if (identity !== undefined) {
      out.push({ level: 'identity', name: names.identity(id.identityId as string, identity), limit: identity })
    }
    return out
  }

  function decided (list: Bucket[], result: TakeResult): Verdict {
    const now = Date.now()
    const rows = list.map((bucket, i) => ({ bucket, ...(result.buckets[i] as BucketResult) }))
    const left = (row: Row): number => Math.max(0, row.bucket.limit.count - row.used)
    if (result.allowed) {
      o.meter.allowed()
      // the strictest: the fewest requests left, then the furthest reset
      let pick = rows[0] as Row
      for (const row of rows) {
        if (left(row) < left(pick) || (left(row) === left(pick) && row.resetMs > pick.resetMs)) pick = row
      }
      return { allowed: true, limit: pick.bucket.limit.count, remaining: left(pick), resetS: seconds(pick.resetMs) }
    }
    // refused: every bucket with nothing left is blocked here until its reset; the one
    // that frees last is the answer
    let pick: Row | undefined
    for (const row of rows) {
      if (left(row) > 0) continue
      o.blocked.block(row.bucket.name, row.bucket.limit, now + row.resetMs, now)
      if (pick === undefined || row.resetMs > pick.resetMs) pick = row
    }
    pick ??= rows[0] as Row // (the script refuses only when a bucket is full)
    o.meter.limited(pick.bucket.level, 'redis')
    return refused(pick.bucket.limit.count, pick.resetMs)
  }

  return {
    check (id, now) {
      const limits = applicableLimits(id, o.defaultLimit)
      const { key, role, org, identity } = limits
      if (key === undefined && role === undefined && org === undefined && identity === undefined) return undefined
      if (key === MALFORMED || role === MALFORMED || org === MALFORMED || identity === MALFORMED) {
        o.meter.limited(malformedLevel(limits) as LimitLevel, 'malformed')
        return MALFORMED_VERDICT
      }
      const list = buckets(id, key, role, org, identity)

      // a bucket this process saw refuse, still before its reset: refused without Redis
      let blockedMs = 0
      let blockedAt: Bucket | undefined
      for (const b of list) {
        const ms = o.blocked.remaining(b.name, b.limit, now)
        if (ms > blockedMs) {
          blockedMs = ms
          blockedAt = b
        }
      }
      if (blockedAt !== undefined) {
        o.meter.limited(blockedAt.level, 'local')
        return refused(blockedAt.limit.count, blockedMs)
      }

      return o.script.take(list).then((result) => decided(list, result), () => {
        const deny = o.onError === 'deny'
        o.meter.error(deny)
        return deny ? UNAVAILABLE : undefined
      })
    }
  }
}

function refused (limit: number, resetMs: number): Verdict {
  const s = seconds(resetMs)
  return { allowed: false, reason: 'rate_limited', limit, remaining: 0, resetS: s, retryAfterS: s }
}

/** Whole seconds, rounded up, at least 1: a client that waits this long is not early. */
function seconds (ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}
