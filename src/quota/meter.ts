/**
 * The quota stage's allowance check (docs/quotas.md): the quota and credits of the key,
 * of its org and of its identity, checked and spent together (script.ts); every one
 * that applies must cover the request.
 *
 *   key       the key record's `quota` and `credits`       its meter: the key's own, or the one it continues (rotation)
 *   org       the org record's `quota` and `credits`       one meter for every key of the org
 *   identity  the identity record's `quota` and `credits`  one meter for every key of the identity (docs/identities.md)
 *
 * They come from the records the cache holds (parsed once, src/registry/meter-fields.ts), so
 * `check` is synchronous and costs nothing for a key with no allowance (most keys) and
 * refuses at once for a malformed one; a metered request costs its share of one script
 * call, batched with the others of its turn of the event loop. It never rejects: a
 * failed script is `quota.on_error`'s to decide.
 */
import { MALFORMED, nextPeriodStart, periodStart, type Quota } from '../config/quota.js'
import type { QuotaMeterMetrics } from '../metrics/quota-metrics.js'
import type { RecordMeter } from '../registry/records.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import type { MeterAnswer, MeterRow, QuotaScript } from './script.js'

/**
 * What the meter reads of an authorized identity (decision/identity.ts): the key's and
 * its org's allowance, and a BOT key's identity's (its rows `meter:identity:<id>`, with
 * `keygate:identity:<id>` as their record: appliedMeters).
 */
export interface MeteredIdentity {
  keyId: string
  org: string
  keyMeter?: RecordMeter | undefined
  orgMeter?: RecordMeter | undefined
  identityId?: string | undefined
  identityMeter?: RecordMeter | undefined
}

/** One allowance's state, for the headers: its policy name, its size and what is left. */
export interface Allowance {
  /** `<level>-quota`, `<level>-credits` (level: key, org, identity): the RateLimit-Policy item names */
  name: string
  /** the quota's count; the credits granted in all */
  limit: number
  /** units left after this request (never below 0 in a header) */
  remaining: number
  /** a quota: its period's length and the time to its next refill, in whole seconds */
  windowS?: number
  resetS?: number
}

export type QuotaVerdict =
  | { allowed: true, allowances: Allowance[] }
  | {
    allowed: false
    /** over an allowance; or a record's quota or credits that do not parse (nothing is allowed) */
    reason: 'quota_exceeded' | 'invalid_record'
    allowances: Allowance[]
    /** the time to the refill that would let the request on; undefined: none is due (credits ran out) */
    retryAfterS: number | undefined
  }
  | { allowed: false, reason: 'quota_unavailable' }

/** What a rule costs (docs/quotas.md): a whole number of units, or `upstream`: the response says. */
export type Cost = number | 'upstream'

export interface QuotaMeter {
  /** undefined (synchronously): no allowance applies; else the verdict (undefined: Redis down, on_error allow) */
  check: (id: MeteredIdentity, cost: Cost, now: number) => undefined | QuotaVerdict | Promise<QuotaVerdict | undefined>
  /**
   * After the response of a `cost: upstream` request: `units` spent, whatever is left (the overdraft's bound); a
   * negative `units` gives them back (a request refused at the body stage, after its decision spent them).
   */
  debit: (id: MeteredIdentity, units: number, now: number) => Promise<void>
}

/** A quota's use that reached 80, 90 or 100 % with this spend (`quota.threshold`, docs/webhooks.md). */
export interface ThresholdCrossed {
  level: 'key' | 'org' | 'identity'
  keyId: string
  org: string
  /** the identity whose shared quota it is (level `identity`) */
  identityId?: string | undefined
  /** the meter's Redis key (one per key, or the key it continues, or org) */
  meter: string
  percent: number
  limit: number
  used: number
  periodStart: number
  periodEnd: number
}

export const THRESHOLDS = [80, 90, 100] as const

export interface QuotaMeterOptions {
  /** told (synchronously, after the spend) of each threshold a spend reached; off the request's path */
  onThreshold?: ((t: ThresholdCrossed) => void) | undefined
  script: QuotaScript
  keys: Pick<RedisKeys, 'key' | 'org' | 'identity' | 'meter'>
  metrics: QuotaMeterMetrics
  onError: 'allow' | 'deny'
  /** `keygate check`: every allowance read and checked, nothing spent */
  preview?: boolean
}

const MALFORMED_VERDICT: QuotaVerdict = Object.freeze({
  allowed: false, reason: 'invalid_record', allowances: [], retryAfterS: undefined
})
const UNAVAILABLE: QuotaVerdict = Object.freeze({ allowed: false, reason: 'quota_unavailable' })

interface Applied {
  level: 'key' | 'org' | 'identity'
  quota: Quota | undefined
  row: MeterRow
}

/** The allowances that apply, as script rows; undefined: none; MALFORMED: one does not parse. */
export function appliedMeters (
  id: MeteredIdentity, keys: QuotaMeterOptions['keys'], now: number
): Applied[] | undefined | typeof MALFORMED {
  const { keyMeter, orgMeter, identityId } = id
  const identityMeter = identityId === undefined ? undefined : id.identityMeter
  if (keyMeter === undefined && orgMeter === undefined && identityMeter === undefined) return undefined
  const out: Applied[] = []
  for (const [level, m] of [['key', keyMeter], ['org', orgMeter], ['identity', identityMeter]] as const) {
    if (m === undefined) continue
    if (m.quota === MALFORMED || m.credits === MALFORMED) return MALFORMED
    const record = level === 'key'
      ? keys.key(id.keyId)
      : level === 'org' ? keys.org(id.org) : keys.identity(identityId as string)
    const meter = level === 'key'
      ? keys.meter('key', m.continues ?? id.keyId)
      : level === 'org' ? keys.meter('org', id.org) : keys.meter('identity', identityId as string)
    const quota = m.quota
    out.push({
      level,
      quota,
      row: {
        meter,
        record,
        quota: quota === undefined ? undefined : { count: quota.count, periodStart: periodStart(quota.period, now) },
        credits: m.credits !== undefined
      }
    })
  }
  return out
}

export function createQuotaMeter (o: QuotaMeterOptions): QuotaMeter {
  return {
    check (id, cost, now) {
      const applied = appliedMeters(id, o.keys, now)
      if (applied === undefined) return undefined
      if (applied === MALFORMED) {
        o.metrics.outcome('malformed')
        return MALFORMED_VERDICT
      }
      // a `cost: upstream` request starts with 1 unit left and is debited after its response
      const need = cost === 'upstream' ? 1 : cost
      const debit = cost === 'upstream' || o.preview === true ? 0 : cost
      return o.script.ask({ need, debit, rows: applied.map((a) => a.row) }).then((answer) => {
        if (o.onThreshold !== undefined && answer.allowed && debit > 0) {
          tellCrossed(o.onThreshold, id, applied, answer, debit)
        }
        const v = verdictOf(applied, answer, need, now)
        o.metrics.outcome(v.allowed ? 'allowed' : 'exceeded')
        return v
      }, () => {
        const deny = o.onError === 'deny'
        o.metrics.outcome(deny ? 'error_denied' : 'error_allowed')
        return deny ? UNAVAILABLE : undefined
      })
    },
    async debit (id, units, now) {
      const applied = appliedMeters(id, o.keys, now)
      if (applied === undefined || applied === MALFORMED || units === 0) return
      const answer = await o.script.ask({ need: 0, debit: units, rows: applied.map((a) => a.row) })
      if (o.onThreshold !== undefined && units > 0) tellCrossed(o.onThreshold, id, applied, answer, units)
      o.metrics.outcome(units > 0 ? 'debited' : 'refunded')
    }
  }
}

/** The script's answer -> the verdict: each allowance's state, and when refused, the refill that would help. */
export function verdictOf (applied: readonly Applied[], answer: MeterAnswer, need: number, now: number): QuotaVerdict {
  const allowances: Allowance[] = []
  let retryAfterS: number | undefined = 0
  applied.forEach((a, i) => {
    const row = answer.rows[i] ?? {}
    if (a.quota !== undefined && row.quotaLeft !== undefined && row.periodStart !== undefined) {
      const next = nextPeriodStart(a.quota.period, row.periodStart)
      const resetS = seconds(next - now)
      allowances.push({
        name: `${a.level}-quota`,
        limit: a.quota.count,
        remaining: Math.max(0, row.quotaLeft),
        windowS: seconds(next - row.periodStart),
        resetS
      })
      if (!answer.allowed && row.quotaLeft < need && retryAfterS !== undefined) {
        retryAfterS = Math.max(retryAfterS, resetS)
      }
    }
    if (row.granted !== undefined && row.creditsLeft !== undefined) {
      allowances.push({ name: `${a.level}-credits`, limit: row.granted, remaining: Math.max(0, row.creditsLeft) })
      // credits grow only when an admin adds to them: no refill is due
      if (!answer.allowed && row.creditsLeft < need) retryAfterS = undefined
    }
  })
  if (answer.allowed) return { allowed: true, allowances }
  return { allowed: false, reason: 'quota_exceeded', allowances, retryAfterS }
}

/** Each quota whose use went from below a threshold to at or above it with this spend. */
function tellCrossed (
  tell: (t: ThresholdCrossed) => void,
  id: MeteredIdentity,
  applied: readonly Applied[],
  answer: MeterAnswer,
  debit: number
): void {
  applied.forEach((a, i) => {
    const row = answer.rows[i]
    if (a.quota === undefined || row?.quotaLeft === undefined || row.periodStart === undefined) return
    const limit = a.quota.count
    const used = limit - row.quotaLeft
    const before = used - debit
    for (const percent of THRESHOLDS) {
      if (before * 100 < limit * percent && used * 100 >= limit * percent) {
        tell({
          level: a.level,
          keyId: id.keyId,
          org: id.org,
          identityId: a.level === 'identity' ? id.identityId : undefined,
          meter: a.row.meter,
          percent,
          limit,
          used,
          periodStart: row.periodStart,
          periodEnd: nextPeriodStart(a.quota.period, row.periodStart)
        })
      }
    }
  })
}

/** Whole seconds, rounded up, at least 1. */
function seconds (ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000))
}
