/**
 * How long a key may live: an org's key policy (`key_max_ttl`, the longest any key
 * created, imported or rotated in the org lives) and the self-service cap of a BOT key
 * created by an org or self principal. No expiry asked means the shortest cap; a longer
 * one is refused.
 */
import { parseDuration } from '../../config/duration.js'
import { AdminError } from '../model/errors.js'
import type { Fields } from '../model/snapshot.js'

/**
 * The org's key policy from its record: the longest a key of the org may live (ms), or
 * undefined. A malformed value (a hand edit) caps keys at nothing: refused.
 */
export function keyCapOf (org: string, record: Fields | undefined): number | undefined {
  const text = record?.key_max_ttl
  if (text === undefined || text === '') return undefined
  const ms = parseDuration(text)
  if (ms === undefined || ms <= 0) {
    throw new AdminError(
    `org "${org}" has a malformed key_max_ttl "${text}"; fix it with keygate orgs put`,
    'conflict'
    )
  }
  return ms
}

/** The cap's refusal of a longer expiry, about `field`. */
export function overCap (org: string, cap: number, field: string): AdminError {
  const why = capReason(org, cap)
  return new AdminError(why, 'invalid', undefined, [{ field, reason: why }])
}

export function capReason (org: string, cap: number): string {
  return `org "${org}" lets its keys live ${formatTtl(cap)} at most (key_max_ttl)`
}

/** The expiry a key gets when none is asked: the shortest of the caps; undefined: none. */
export function defaultExpiry (...caps: Array<number | undefined>): number | undefined {
  const within = Math.min(...caps.map((c) => c ?? Infinity))
  return within === Infinity ? undefined : within
}

/** A duration as the configuration writes one: `90d`, `12h`, `30m`, else seconds. */
export function formatTtl (ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000]
  ] as const) if (ms % size === 0) return `${ms / size}${unit}`
  return `${Math.round(ms / 1000)}s`
}
