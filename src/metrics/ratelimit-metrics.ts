/** Rate limits (src/ratelimit/): decisions, refusals by level, the limiter's Redis errors, blocked buckets. */
import type { Registrar } from './registrar.js'
import { CountTable } from './series.js'

export const LIMIT_LEVELS = ['key', 'role', 'org', 'identity'] as const
export type LimitLevel = typeof LIMIT_LEVELS[number]

/** Where a refusal was decided: by the script in Redis, by a block held in process, by a malformed limit. */
export const REFUSAL_SOURCES = ['redis', 'local', 'malformed'] as const
export type RefusalSource = typeof REFUSAL_SOURCES[number]

/** Recorded by the limiter (src/ratelimit/limiter.ts). */
export interface RateLimitMeter {
  /** a limited request was allowed */
  allowed: () => void
  /** a limited request was refused: the level of the limit that decided, and where */
  limited: (level: LimitLevel, source: RefusalSource) => void
  /** the script failed (Redis unreachable, timed out, or an error reply); `denied`: on_error deny */
  error: (denied: boolean) => void
}

export function rateLimitMetrics (r: Registrar, blocked: () => number): RateLimitMeter {
  let allowed = 0
  r.total('keygate_rate_limit_allowed_total',
    'Requests under at least one rate limit that the limits allowed.',
    () => allowed)
  const limited = new CountTable((slot) => ({
    level: LIMIT_LEVELS[slot % LIMIT_LEVELS.length] as string,
    source: REFUSAL_SOURCES[Math.floor(slot / LIMIT_LEVELS.length)] as string
  }))
  for (let slot = 0; slot < LIMIT_LEVELS.length * REFUSAL_SOURCES.length; slot++) limited.add(slot, 0)
  r.counter({
    name: 'keygate_rate_limited_total',
    help: 'Requests refused with 429 rate_limited, by the level of the limit that decided (key: the key\'s own or ' +
      'the default; role; org) and where: "redis" (the script), "local" (a bucket this process holds blocked until ' +
      'its reset), "malformed" (a record\'s rate_limit that does not parse).',
    labelNames: ['level', 'source'],
    collect () { limited.exportTo(this) }
  })
  const errors = new CountTable((slot) => ({ on_error: slot === 0 ? 'allow' : 'deny' }))
  errors.add(0, 0)
  errors.add(1, 0)
  r.counter({
    name: 'keygate_rate_limit_errors_total',
    help: 'Rate-limit checks that could not reach Redis (unreachable, redis.command_timeout_ms, an error reply), by ' +
      'what rate_limits.on_error did: "allow" (the request went on, unlimited) or "deny" (503).',
    labelNames: ['on_error'],
    collect () { errors.exportTo(this) }
  })
  r.level('keygate_rate_limit_blocked_buckets',
    'Buckets this process holds blocked until their reset (refused without asking Redis).', 'sum',
    blocked)
  return {
    allowed () { allowed++ },
    limited (level, source) {
      limited.add(REFUSAL_SOURCES.indexOf(source) * LIMIT_LEVELS.length + LIMIT_LEVELS.indexOf(level))
    },
    error (denied) { errors.add(denied ? 1 : 0) }
  }
}
