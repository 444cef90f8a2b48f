/**
 * The audit export's steps (src/admin/audit-export/), admin only: the entries after the
 * cursor, the lease that lets one instance ship at a time, and the cursor's move once
 * the OTLP endpoint accepted a batch (store/audit-export.ts).
 */
import type { AuditEntry } from '../model/views.js'
import { requireAdmin } from '../policy/scope-rules.js'
import {
  advanceExportCursor, entriesToExport, holdExportLease, releaseExportLease
} from '../store/audit-export.js'
import type { ActionContext } from './context.js'

/** Takes or renews the export lease for `ms`; false: another instance ships. */
export async function holdLease (a: ActionContext, token: string, ms: number): Promise<boolean> {
  requireAdmin(a.scope, 'exporting the audit trail')
  return await holdExportLease(a.store.redis, a.store.keys, token, ms)
}

export async function releaseLease (a: ActionContext, token: string): Promise<void> {
  requireAdmin(a.scope, 'exporting the audit trail')
  await releaseExportLease(a.store.redis, a.store.keys, token)
}

/** Up to `count` entries not yet shipped, oldest first. */
export async function pending (
  a: ActionContext, count: number
): Promise<{ cursor: string | undefined, entries: AuditEntry[] }> {
  requireAdmin(a.scope, 'exporting the audit trail')
  return await entriesToExport(a.store.redis, a.store.keys, count)
}

/** The endpoint accepted every entry up to `id`; false: the lease was lost (the next holder ships them again). */
export async function shipped (a: ActionContext, token: string, id: string): Promise<boolean> {
  requireAdmin(a.scope, 'exporting the audit trail')
  return await advanceExportCursor(a.store.redis, a.store.keys, token, id)
}
