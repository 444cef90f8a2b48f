/**
 * Changes to an allowance (docs/quotas.md), of a key or an org: its `quota` set or
 * removed, credits added. Admin only: an allowance is what a customer paid for, so no
 * org admin or key holder grants itself more. Credits only grow here (an addition of at
 * least 1); what requests spend is counted apart, by the gateway.
 */
import { AdminError } from '../model/errors.js'
import type { AdminScope } from '../model/principal.js'
import type { Snapshot } from '../model/snapshot.js'
import { checkCredits, checkName, checkQuota } from './names.js'
import { requireAdmin } from './scope-rules.js'
import { visibleIdentity } from './identities.js'

/** `quota`: a quota sets it, `null` removes it, undefined keeps it; `addCredits`: units granted on top. */
export interface MeterChange {
  quota?: string | null | undefined
  addCredits?: number | undefined
}

export interface MeterDecision {
  /** the org of the key (or the org itself), for the audit trail */
  org: string | undefined
  /** the quota's change (undefined: none), as `quota.changed`'s detail */
  quota?: { next: string | null, detail: Record<string, string> }
  /** the credits' addition, as `credits.added`'s detail (`credits`: granted in all after it) */
  credits?: { add: number, detail: Record<string, string> }
}

/** Who may change which allowance, and what the change is; a key that does not exist is 404. */
export function decideMeter (
  s: AdminScope,
  snap: Snapshot,
  target: { key: string } | { org: string } | { identity: string },
  change: MeterChange
): MeterDecision {
  // an identity's: its org's admin's too (policy/identities.ts says why); any other: an admin's
  if ('identity' in target) visibleIdentity(s, target.identity, snap.identities.get(target.identity))
  if (!('identity' in target) || s.scope === 'self') requireAdmin(s, 'an allowance (quota, credits)')
  if (change.quota === undefined && change.addCredits === undefined) {
    throw new AdminError('nothing to change: give a quota (or none) or credits to add')
  }
  if (typeof change.quota === 'string') checkQuota(change.quota)
  if (change.addCredits !== undefined) checkCredits(change.addCredits, 'add_credits', 1)
  let record: Readonly<Record<string, string>>
  let org: string | undefined
  if ('key' in target) {
    const key = snap.keys.get(target.key)
    if (key?.type === undefined) throw new AdminError(`key "${target.key}" does not exist`, 'not_found')
    record = key
    org = key.org
  } else if ('identity' in target) {
    record = snap.identities.get(target.identity) ?? {}
    org = record.org
  } else {
    checkName('org', target.org)
    record = snap.orgs.get(target.org) ?? {}
    org = target.org
  }
  const decision: MeterDecision = { org }
  const current = record.quota ?? null
  if (change.quota !== undefined && change.quota !== current) {
    decision.quota = { next: change.quota, detail: { quota: change.quota ?? '', from: current ?? '' } }
  }
  if (change.addCredits !== undefined) {
    const granted = Number(record.credits ?? 0)
    const total = (Number.isSafeInteger(granted) ? granted : 0) + change.addCredits
    checkCredits(total)
    decision.credits = {
      add: change.addCredits,
      detail: { added: String(change.addCredits), credits: String(total) }
    }
  }
  return decision
}
