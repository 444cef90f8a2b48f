/**
 * The audit trail's reads (store/audit-log.ts): an admin reads every entry; an org admin
 * only those of its own org (changes to its org's keys and users, and the refusals
 * counted under it); anyone else is refused. And the one-off migration of `created_by`.
 */
import type { AuditEntry, RefusalAggregate } from '../model/views.js'
import { requireAdmin, requireOrgAdmin } from '../policy/scope-rules.js'
import type { AuditPage, AuditQuery } from '../store/audit-log.js'
import { migrateCreatedBy as migrate } from '../store/created-by-migration.js'
import { callerNames, type ActionContext } from './context.js'

export type { AuditOptions, AuditPage, AuditQuery } from '../store/audit-log.js'

/** Every change in range, oldest first (`keygate audit`). */
export async function readAudit (a: ActionContext, sinceMs?: number, now = Date.now()): Promise<AuditEntry[]> {
  requireAdmin(a.scope, 'reading the whole audit trail')
  return await a.store.audit.readAll(sinceMs, now)
}

/** One page of changes, newest first (GET /audit). */
export async function pageAudit (a: ActionContext, q: AuditQuery, now = Date.now()): Promise<AuditPage<AuditEntry>> {
  requireOrgAdmin(a.scope, 'reading the audit trail')
  return await a.store.audit.page(ownOrg(a, q), now)
}

/** One page of refused attempts, aggregated per minute, newest first (GET /audit/refusals). */
export async function readRefusals (
  a: ActionContext,
  q: AuditQuery,
  now = Date.now()
): Promise<AuditPage<RefusalAggregate>> {
  requireOrgAdmin(a.scope, 'reading the audit trail')
  return await a.store.audit.refusals(ownOrg(a, q), now)
}

/**
 * A person signed in through SSO (admin only: the sign-in's own actions), audited as
 * `session.begin` on `user:<id>`, with the claim that matched and its value.
 */
export async function recordSignIn (
  a: ActionContext,
  user: string,
  org: string,
  by: { claim: 'sub' | 'email', value: string }
): Promise<void> {
  requireAdmin(a.scope, 'recording a sign-in')
  await a.store.redis.xadd(...a.store.audit.changeArgs(
    'session.begin', `user:${user}`, 'ok', { claim: by.claim, [by.claim]: by.value }, org
  ))
}

/** Types every `created_by` and unindexes BOT keys from non-user "owners" (store/created-by-migration.ts). */
export async function migrateCreatedBy (a: ActionContext): Promise<{ rewritten: string[], unindexed: string[] }> {
  requireAdmin(a.scope, 'migrating created_by')
  return await migrate(a.store)
}

/** The query as the caller may ask it: an org admin's, limited to its own org. */
function ownOrg (a: ActionContext, q: AuditQuery): AuditQuery {
  const org = callerNames(a.scope).org
  return org === undefined ? q : { ...q, org }
}
