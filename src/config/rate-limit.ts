/**
 * A rate limit as written everywhere (the `rate_limit` field of key, role and org
 * records, `rate_limits.default`, the CLI, the admin API and the console):
 * `<count>/<period>`, the period a duration (`100/1s`, `5000/1h`, `20/10m`, `1000/1d`).
 * This is the one parser; the others take its pattern.
 *
 * A record's field is parsed once, when the record enters the cache. A field that is
 * present but malformed parses to MALFORMED, a limit that allows nothing (fail closed:
 * a bad record denies, docs/rate-limits.md).
 */

/**
 * The grammar: `<count>/<period>`, count 1..999,999,999, period `<n>s|m|h|d` with n
 * 1..9,999. The configuration's schema and the admin API's JSON schemas take its pattern.
 */
export const RATE_LIMIT = /^([1-9][0-9]{0,8})\/([1-9][0-9]{0,3})([smhd])$/
export const RATE_LIMIT_PATTERN = RATE_LIMIT.source

const UNIT_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

export interface RateLimit {
  /** requests allowed in any window of `periodMs` */
  readonly count: number
  /** the window, in whole seconds (ms) */
  readonly periodMs: number
  /** as written, normalised (`100/1s`) */
  readonly text: string
}

/** A `rate_limit` field that is present but not a limit: nothing is allowed. */
export const MALFORMED = 'malformed' as const
export type Malformed = typeof MALFORMED

/** What a record carries: no limit, a limit, or a malformed field. */
export type RecordLimit = RateLimit | Malformed | undefined

/** Parsed limits are shared: many records carry the same few texts. Bounded; when full it starts over. */
const parsed = new Map<string, RateLimit>()
const PARSED_SHARED = 1000

/** `<count>/<period>` -> the limit; undefined when the text is not one. */
export function parseRateLimit (text: string): RateLimit | undefined {
  const known = parsed.get(text)
  if (known !== undefined) return known
  const m = RATE_LIMIT.exec(text)
  if (m === null) return undefined
  const limit: RateLimit = Object.freeze({
    count: Number(m[1]),
    periodMs: Number(m[2]) * (UNIT_MS[m[3] as string] as number),
    text
  })
  if (parsed.size >= PARSED_SHARED) parsed.clear()
  parsed.set(text, limit)
  return limit
}

/** A record's `rate_limit` field: absent or empty is no limit; anything else must parse. */
export function recordLimit (field: string | undefined): RecordLimit {
  if (field === undefined || field === '') return undefined
  return parseRateLimit(field) ?? MALFORMED
}

/** A message naming the expected form (CLI and admin API refusals). */
export const RATE_LIMIT_HELP = 'a rate limit is <count>/<period>, like 100/1s or 5000/1h (period units s, m, h, d)'
