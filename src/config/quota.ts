/**
 * A quota and a credit balance as written everywhere (the `quota` and `credits` fields
 * of key and org records, the CLI, the admin API): `quota` is `<count>/<day|week|month>`,
 * `credits` a whole number. This is the one parser, and the one place of the calendar
 * arithmetic: periods are UTC calendar days, weeks starting on Monday, and months
 * (docs/quotas.md).
 *
 * A record's field is parsed once, when the record enters the cache; a field present
 * but malformed parses to MALFORMED (fail closed: nothing is allowed).
 */
import { MALFORMED, type Malformed } from './rate-limit.js'

export { MALFORMED }

export const QUOTA = /^([1-9][0-9]{0,11})\/(day|week|month)$/
export const QUOTA_PATTERN = QUOTA.source
/** what an admin adds at once, and a record's credits granted: a whole number up to 10^15 */
export const CREDITS = /^(0|[1-9][0-9]{0,14})$/
export const CREDITS_PATTERN = CREDITS.source

export type QuotaPeriod = 'day' | 'week' | 'month'

export interface Quota {
  /** units allowed in each calendar period */
  readonly count: number
  readonly period: QuotaPeriod
  /** as written (`100000/month`) */
  readonly text: string
}

export type RecordQuota = Quota | Malformed | undefined
export type RecordCredits = number | Malformed | undefined

const parsed = new Map<string, Quota>()
const PARSED_SHARED = 1000

/** `<count>/<day|week|month>` -> the quota; undefined when the text is not one. */
export function parseQuota (text: string): Quota | undefined {
  const known = parsed.get(text)
  if (known !== undefined) return known
  const m = QUOTA.exec(text)
  if (m === null) return undefined
  const quota: Quota = Object.freeze({ count: Number(m[1]), period: m[2] as QuotaPeriod, text })
  if (parsed.size >= PARSED_SHARED) parsed.clear()
  parsed.set(text, quota)
  return quota
}

/** A record's `quota`: absent or empty is none; anything else must parse. */
export function recordQuota (field: string | null | undefined): RecordQuota {
  if (field == null || field === '') return undefined
  return parseQuota(field) ?? MALFORMED
}

/** A record's `credits` (what was granted in all): absent or empty is none; anything else must be a whole number. */
export function recordCredits (field: string | null | undefined): RecordCredits {
  if (field == null || field === '') return undefined
  return CREDITS.test(field) ? Number(field) : MALFORMED
}

export const QUOTA_HELP = 'a quota is <count>/<day|week|month>, like 500/day or 100000/month'
export const CREDITS_HELP = 'credits are a whole number from 0 to 999999999999999'

const DAY_MS = 86_400_000

/** The start of the UTC calendar period that holds `now` (epoch ms); weeks start on Monday. */
export function periodStart (period: QuotaPeriod, now: number): number {
  const day = Math.floor(now / DAY_MS)
  if (period === 'day') return day * DAY_MS
  // (1970-01-01 was a Thursday: 3 days after a Monday)
  if (period === 'week') return (day - ((day + 3) % 7)) * DAY_MS
  const d = new Date(now)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
}

/** The start of the period after the one that starts at `start`: the next refill. */
export function nextPeriodStart (period: QuotaPeriod, start: number): number {
  if (period === 'day') return start + DAY_MS
  if (period === 'week') return start + 7 * DAY_MS
  const d = new Date(start)
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)
}
