/**
 * A key's or an org's request counts over a range, at a step of a minute, an hour or a
 * day, read from the hashes the usage counter writes (counter.ts): the minute
 * hashes for `1m` (one per hour of the range), the hour hashes for `1h` and `1d` (one per
 * day), all sent in one pipeline; several keys' (readKeysUsage) in one pipeline too.
 * Every bucket of the range is a point, zero when nothing was counted (or when it is
 * past what Redis keeps); several series of one range add up point by point (addPoints).
 */
import { isCluster, type RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { CLASS_LETTERS, DAY_MS, HOUR_MS, MINUTE_MS } from './counter.js'

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
export function usageRange (
  q: { from?: number, to?: number, step?: Step }, now: number
): UsageRange | { field: string, reason: string } {
  const step = q.step ?? '1h'
  const to = q.to ?? Math.ceil((now + 1) / STEPS[step]) * STEPS[step]
  const from = q.from ?? to - DAY_MS
  if (from > to) return { field: 'from', reason: 'after to' }
  const range: UsageRange = { from, to, step }
  if (bucketsOf(range).count > MAX_POINTS) {
    return { field: 'step', reason: `the range holds more than ${MAX_POINTS} points at this step` }
  }
  return range
}

export type UsageSubject = { key: string } | { org: string }

export async function readUsage (
  redis: RegistryClient, keys: RedisKeys, subject: UsageSubject, range: UsageRange
): Promise<UsagePoint[]> {
  const names = hashNamesOf(keys, subject, range)
  return pointsOf(
    await sendReads(redis, names.map((name) => ({ hgetall: name }))) as Array<Record<string, string>>, range
  )
}

/** the key record's fields that decide who may read its usage (src/admin/policy/scope-rules.ts) */
export const OWNER_FIELDS = ['type', 'org', 'user', 'created_by'] as const
export interface KeyOwner { type: string, org: string, user?: string, created_by?: string }

/** the most keys one batch read answers, and the most points in all */
export const BATCH_MAX_KEYS = 200
export const BATCH_MAX_POINTS = 20_000

/**
 * Several keys' counts over one range, in one pipeline: each key's owner fields (for the
 * caller's scope check, made on the answer: a key without a record has no owner) and
 * its usage hashes. A key asked twice is answered once.
 */
export async function readKeysUsage (
  redis: RegistryClient, keys: RedisKeys, ids: readonly string[], range: UsageRange
): Promise<Array<{ id: string, owner: KeyOwner | undefined, points: UsagePoint[] }>> {
  const unique = [...new Set(ids)]
  if (unique.length === 0) return []
  if (unique.length * bucketsOf(range).count > BATCH_MAX_POINTS) {
    throw new RangeError(`at most ${BATCH_MAX_POINTS} points`)
  }
  const names = unique.map((id) => hashNamesOf(keys, { key: id }, range))
  const reads: Read[] = []
  unique.forEach((id, i) => {
    reads.push({ hmget: keys.key(id), fields: OWNER_FIELDS })
    for (const name of names[i] as string[]) reads.push({ hgetall: name })
  })
  const replies = await sendReads(redis, reads)
  let at = 0
  return unique.map((id, i) => {
    const [type, org, user, createdBy] = replies[at] as Array<string | null>
    const count = (names[i] as string[]).length
    const points = pointsOf(replies.slice(at + 1, at + 1 + count) as Array<Record<string, string>>, range)
    at += 1 + count
    const owner: KeyOwner | undefined = type === null || type === undefined || org === null || org === undefined
      ? undefined
      : { type, org }
    if (owner !== undefined && user !== null && user !== undefined) owner.user = user
    if (owner !== undefined && createdBy !== null && createdBy !== undefined) owner.created_by = createdBy
    return { id, owner, points }
  })
}

/** The range's points, every one zero: where a sum of several series starts. */
export function zeroPoints (range: UsageRange): UsagePoint[] {
  return pointsOf([], range)
}

/** Adds a series into `into`, point by point (both of one range). */
export function addPoints (into: UsagePoint[], series: readonly UsagePoint[]): void {
  series.forEach((p, i) => {
    const sum = into[i]
    if (sum === undefined) return
    sum.allowed += p.allowed
    sum.refused += p.refused
    sum.limited += p.limited
    sum.errors += p.errors
  })
}

type Read = { hgetall: string } | { hmget: string, fields: readonly string[] }

/**
 * Reads sent together: one ioredis pipeline on a standalone Redis (one socket write);
 * on a Cluster each on its own (an ioredis pipeline serves one node), which ioredis
 * still writes together per node. A failed read fails the whole.
 */
async function sendReads (redis: RegistryClient, reads: Read[]): Promise<unknown[]> {
  if (reads.length === 0) return []
  if (isCluster(redis)) {
    return await Promise.all(reads.map(async (r) =>
      'hgetall' in r ? await redis.hgetall(r.hgetall) : await redis.hmget(r.hmget, ...r.fields)))
  }
  const pipeline = redis.pipeline()
  for (const r of reads) {
    if ('hgetall' in r) pipeline.hgetall(r.hgetall)
    else pipeline.hmget(r.hmget, ...r.fields)
  }
  return (await pipeline.exec() ?? []).map(([err, value]) => {
    if (err !== null) throw err
    return value
  })
}

/** The hashes a range reads: the minute hashes (one per hour) for `1m`, the hour hashes (one per day) otherwise. */
function hashNamesOf (keys: RedisKeys, subject: UsageSubject, range: UsageRange): string[] {
  const { from, to, count } = bucketsOf(range)
  if (count > MAX_POINTS) throw new RangeError(`at most ${MAX_POINTS} points`)
  if (count === 0) return []
  const minutes = range.step === '1m'
  const spanMs = minutes ? HOUR_MS : DAY_MS
  const name = minutes
    ? ('key' in subject
        ? (n: number) => keys.usageMinutes(subject.key, n)
        : (n: number) => keys.orgUsageMinutes(subject.org, n))
    : ('key' in subject
        ? (n: number) => keys.usageHours(subject.key, n)
        : (n: number) => keys.orgUsageHours(subject.org, n))
  const first = Math.floor(from / spanMs)
  const last = Math.floor((to - 1) / spanMs)
  return Array.from({ length: last - first + 1 }, (_, i) => name(first + i))
}

/** The range's points from its hashes (in hashNamesOf's order). */
function pointsOf (hashes: Array<Record<string, string>>, range: UsageRange): UsagePoint[] {
  const { from, to, stepMs } = bucketsOf(range)
  const minutes = range.step === '1m'
  // a hash covers an hour (minutes) or a day (hours)
  const spanMs = minutes ? HOUR_MS : DAY_MS
  const first = Math.floor(from / spanMs)
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
