/**
 * `cost: upstream` (docs/quotas.md#costs): the upstream reports what a request cost in a
 * response header (`quota.cost_header`, default `X-Keygate-Cost`), which the gateway
 * removes from every response before the client sees it, and debits after the response
 * arrived: a whole number, else (missing, repeated, not a number) the rule's `default_cost`.
 */
import type { QuotaMeter, MeteredIdentity } from './meter.js'

export interface UpstreamCost {
  /** the header's name, lower case */
  header: string
  /** debits `units` of the identity's allowances, off the response's path */
  debit: (id: MeteredIdentity, units: number) => void
}

const COST = /^(0|[1-9][0-9]{0,8})$/

/** The units a response reports, or `fallback` when it reports none that parse. */
export function reportedCost (value: string | string[] | undefined, fallback: number): number {
  return typeof value === 'string' && COST.test(value.trim()) ? Number(value.trim()) : fallback
}

export function upstreamCost (header: string, meter: QuotaMeter, onError: (err: unknown) => void): UpstreamCost {
  return {
    header: header.toLowerCase(),
    debit (id, units) {
      meter.debit(id, units, Date.now()).catch(onError)
    }
  }
}
