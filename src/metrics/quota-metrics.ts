/** Quotas and credits (src/quota/): the metered requests by outcome. */
import type { Registrar } from './registrar.js'
import { CountTable } from './series.js'

/**
 * allowed; exceeded (429 quota_exceeded); malformed (a record's quota or credits that do not
 * parse: nothing is allowed); error_denied (Redis unreachable, 503) and error_allowed (let on
 * unmetered) by `quota.on_error`; debited (a `cost: upstream` response charged after it arrived), debit_failed
 * (that charge could not reach Redis: the units are not spent), refunded (a fixed cost given back: the request
 * was refused at the body stage, 413/408, after its decision).
 */
export const QUOTA_OUTCOMES = [
  'allowed', 'exceeded', 'malformed', 'error_denied', 'error_allowed', 'debited', 'debit_failed', 'refunded'
] as const
export type QuotaOutcome = typeof QUOTA_OUTCOMES[number]

/** Recorded by the quota meter (src/quota/meter.ts). */
export interface QuotaMeterMetrics {
  outcome: (o: QuotaOutcome) => void
}

export function quotaMetrics (r: Registrar): QuotaMeterMetrics {
  const table = new CountTable((slot) => ({ outcome: QUOTA_OUTCOMES[slot] as string }))
  for (let slot = 0; slot < QUOTA_OUTCOMES.length; slot++) table.add(slot, 0)
  r.counter({
    name: 'keygate_quota_decisions_total',
    help: 'Requests of metered keys (a quota or credits on the key or its org), by outcome: "allowed", "exceeded" ' +
      '(429 quota_exceeded), "malformed" (a record\'s quota or credits that do not parse), "error_denied" (Redis ' +
      'unreachable, 503) and "error_allowed" (let on unmetered) by quota.on_error, "debited" (a cost: upstream ' +
      'response charged after it arrived), "debit_failed" (that charge could not reach Redis) and "refunded" (a ' +
      'fixed cost given back: the request was refused at the body stage, after its decision).',
    labelNames: ['outcome'],
    collect () { table.exportTo(this) }
  })
  return { outcome (o) { table.add(QUOTA_OUTCOMES.indexOf(o)) } }
}
