/**
 * A key's or an org's request counts over a range, at a step of a minute, an hour or a
 * day, read from the hashes the usage counter writes (usage-counter.ts): the minute
 * hashes for `1m` (one per hour of the range), the hour hashes for `1h` and `1d` (one per
 * day), all sent at once. Every bucket of the range is a point, zero when nothing was
 * counted (or when it is past what Redis keeps).
 */
import type { RegistryClient } from './redis-client.js'
import type { RedisKeys } from './redis-keys.js'
import { CLASS_LETTERS, DAY_MS, HOUR_MS, MINUTE_MS } from './usage-counter.js'

export const STEPS = { '1m': MINUTE_MS, '1h': HOUR_MS, '1d': DAY_MS } as const
export type Step = keyof typeof STEPS
/** the most points one read answers (48 h of minutes, 120 days of hours) */
export const MAX_POINTS = 2880

export interface UsagePoint {
  /** the bucket's start, ISO 8601 (UTC) */
  t: string
  allowed: number
  refused: number
  limited: number
  errors: number
}

export interface UsageRange {
  /** epoch ms; rounded down to the step */
  from: number
  /** epoch ms, exclusive; rounded up to the step */
  to: number
  step: Step
}

/** The range's buckets: [first start, end) aligned to the step, and how many; the step in ms. */
export function bucketsOf (range: UsageRange): { from: number, to: number, count: number, stepMs: number } {
  const stepMs = STEPS[range.step]
  const from = Math.floor(range.from / stepMs) * stepMs
  const to = Math.max(from, Math.ceil(range.to / stepMs) * stepMs)
  return { from, to, count: (to - from) / stepMs, stepMs }
}

/**
 * A range as asked (epoch ms; each part optional), step 1h unless given: `to` the end of
 * the current step and `from` 24 h before `to` unless given (24 points by the hour).
 * One rule for the admin API and the CLI; a problem names its field.
 */
export function usageRange (q: { from?: number, to?: number, step?: Step }, now: number): UsageRange | { field: string, reason: string } {
  const step = q.step ?? '1h'
  const to = q.to ?? Math.ceil((now + 1) / STEPS[step]) * STEPS[step]
  const from = q.from ?? to - DAY_MS
  if (from > to) return { field: 'from', reason: 'after to' }
  const range: UsageRange = { from, to, step }
  if (bucketsOf(range).count > MAX_POINTS) return { field: 'step', reason: `the range holds more than ${MAX_POINTS} points at this step` }
  return range
}

export type UsageSubject = { key: string } | { org: string }

export async function readUsage (redis: RegistryClient, keys: RedisKeys, subject: UsageSubject, range: UsageRange): Promise<UsagePoint[]> {
  const { from, to, count, stepMs } = bucketsOf(range)
  if (count > MAX_POINTS) throw new RangeError(`at most ${MAX_POINTS} points`)
  const minutes = range.step === '1m'
  // a hash covers an hour (minutes) or a day (hours)
  const spanMs = minutes ? HOUR_MS : DAY_MS
  const name = minutes
    ? ('key' in subject ? (n: number) => keys.usageMinutes(subject.key, n) : (n: number) => keys.orgUsageMinutes(subject.org, n))
    : ('key' in subject ? (n: number) => keys.usageHours(subject.key, n) : (n: number) => keys.orgUsageHours(subject.org, n))
  const first = Math.floor(from / spanMs)
  const last = Math.floor((to - 1) / spanMs)
  const hashes = count === 0 ? [] : await Promise.all(Array.from({ length: last - first + 1 }, async (_, i) => await redis.hgetall(name(first + i))))
  const points: UsagePoint[] = []
  for (let t = from; t < to; t += stepMs) {
    const p: UsagePoint = { t: new Date(t).toISOString(), allowed: 0, refused: 0, limited: 0, errors: 0 }
    // the fields this bucket sums: one minute, one hour, or a day's 24 hours
    const unitMs = minutes ? MINUTE_MS : HOUR_MS
    for (let u = t; u < t + stepMs; u += unitMs) {
      const hash = hashes[Math.floor(u / spanMs) - first]
      if (hash === undefined) continue
      const index = String(Math.floor((u % spanMs) / unitMs))
      p.allowed += Number(hash[index + CLASS_LETTERS[0]] ?? 0)
      p.refused += Number(hash[index + CLASS_LETTERS[1]] ?? 0)
      p.limited += Number(hash[index + CLASS_LETTERS[2]] ?? 0)
      p.errors += Number(hash[index + CLASS_LETTERS[3]] ?? 0)
    }
    points.push(p)
  }
  return points
}
