/**
 * Allowances as they stand (docs/quotas.md): a record's `quota` and `credits` with its
 * meter (`<prefix>meter:key:<id>` or `meter:org:<org>`, src/quota/script.ts): what is
 * used of the quota in the current period (a meter still on an earlier period counts
 * 0: the quota is refilled), and the credits spent.
 */
import { nextPeriodStart, parseQuota, periodStart, recordCredits } from '../../config/quota.js'
import { isoTimestamp } from '../../registry/records.js'
import type { AllowanceView } from '../model/views.js'
import type { StoreContext } from './transactions.js'

/** The allowance of a record (its fields as read) with its meter's state. */
export async function allowanceOf (
  ctx: StoreContext, record: Readonly<Record<string, string>>, meter: string, now: number
): Promise<AllowanceView> {
  const view: AllowanceView = {}
  const quota = record.quota === undefined ? undefined : parseQuota(record.quota)
  const credits = recordCredits(record.credits)
  if (quota === undefined && typeof credits !== 'number') return view
  const [period, used, spent] = await ctx.redis.hmget(meter, 'period', 'used', 'spent')
  if (quota !== undefined) {
    const current = periodStart(quota.period, now)
    const stored = Number(period ?? Number.NaN)
    const start = stored >= current ? stored : current
    const usedNow = stored >= current ? Number(used ?? 0) : 0
    view.quota = {
      quota: quota.text,
      limit: quota.count,
      used: usedNow,
      remaining: quota.count - usedNow,
      period_start: isoTimestamp(start),
      resets_at: isoTimestamp(nextPeriodStart(quota.period, start))
    }
  }
  if (typeof credits === 'number') {
    const s = Number(spent ?? 0)
    view.credits = { granted: credits, spent: s, remaining: credits - s }
  }
  return view
}
