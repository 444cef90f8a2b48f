/**
 * The admin wing's one entrance, what every front end holds: the actions of one
 * principal (the admin API builds one per request, the CLI, the hooks, SSO and the demo
 * one each). Every write reads what it concerns under WATCH, asks the policy, writes in
 * one transaction with its audit entry, and counts a refusal in the audit trail's
 * refusals (context.ts); every read is filtered for the principal (reads.ts).
 *
 *   keys.ts            create, revoke, rotate, restrict, the key's own rate limit
 *   shadow-restrictions.ts  a restriction tried before it is enforced: record, promote, drop
 *   imports.ts         keys brought from another system
 *   leaks.ts           leaked keys reported by a scanner
 *   users.ts           put, deactivate, activate
 *   roles.ts, orgs.ts  roles and org records (admin only)
 *   identities.ts      identities (docs/identities.md): an org admin its own org's
 *   registry-files.ts  the registry as code: plan, apply, export
 *   webhooks.ts        webhook endpoints, their deliveries, a delivery sent again
 *   audit.ts           the audit trail's pages, and a one-off migration
 *   audit-export.ts    the audit trail's export: its lease, the entries not yet shipped, its cursor
 *   reads.ts           keys, users, roles, orgs and request counts, as the principal may see them:
 *                      their part of this facade is read-actions.ts, which AdminActions extends
 */
import type { UsagePoint, UsageRange } from '../../usage/reader.js'
import type { AdminScope } from '../model/principal.js'
import type { ApplyResult, RegistryFile } from '../model/registry-fields.js'
import type {
  KeyQuotaView,
  AuditEntry,
  CreatedKey,
  IdentityView,
  KeyView,
  OrgView,
  RefusalAggregate,
  RoleView,
  RotatedKey
} from '../model/views.js'
import type { KeyRestrictionChange } from '../policy/key-changes.js'
import type { KeyRequest } from '../policy/key-input.js'
import * as audit from './audit.js'
import * as auditExport from './audit-export.js'
import { actionContext, type AdminWing, type Warned } from './context.js'
import * as identities from './identities.js'
import * as imports from './imports.js'
import * as keys from './keys.js'
import * as leaks from './leaks.js'
import * as meters from './meters.js'
import * as orgs from './orgs.js'
import { ReadActions } from './read-actions.js'
import * as registry from './registry-files.js'
import * as roles from './roles.js'
import * as shadows from './shadow-restrictions.js'
import * as users from './users.js'
import * as webhooks from './webhooks.js'
import type { CreatedWebhook, DeliveryView, WebhookView } from '../model/webhooks.js'

export { adminWing, type AdminWing, type Warned } from './context.js'
export { importRefused, readImportLines, readImportRecords, type ImportedKey, type ImportInput } from './imports.js'
export type { LeakOutcome, LeakReport } from './leaks.js'
export type { UserInput, UserStatusChange } from './users.js'
export type { WebhookInput } from './webhooks.js'
export type { OrgInput } from './orgs.js'
export type { IdentityInput } from './identities.js'
export type { ApplyOptions, RegistryExport } from './registry-files.js'
export type { AuditOptions, AuditPage, AuditQuery } from './audit.js'
export type { KeyFilter, KeyPage } from './reads.js'
export type { KeyRestrictionChange } from '../policy/key-changes.js'
export type { KeyRequest } from '../policy/key-input.js'
export { keyOwnerProblem, type KeyOwnerFields } from '../policy/key-input.js'

/** The actions of the principal in `scope`, recorded in the audit trail as `actor`. */
export function adminActions (wing: AdminWing, scope: AdminScope, actor: string): AdminActions {
  return new AdminActions(actionContext(wing, scope, actor))
}

/** Every action of one principal: the reads of reads.ts (ReadActions), and each resource's actions here. */
export class AdminActions extends ReadActions {
  // ---- keys ----------------------------------------------------------------

  async createKey (r: KeyRequest, now?: number): Promise<Warned<CreatedKey>> {
    return await keys.createKey(this.a, r, now)
  }

  async revokeKey (id: string): Promise<{ changed: boolean }> {
    return await keys.revokeKey(this.a, id)
  }

  async rotateKey (id: string, graceMs: number): Promise<RotatedKey> {
    return await keys.rotateKey(this.a, id, graceMs)
  }

  async restrictKey (id: string, change: KeyRestrictionChange): Promise<{ changed: boolean }> {
    return await keys.restrictKey(this.a, id, change)
  }

  /** Shadow restrictions (docs/safe-change.md): tried on the key's requests, never enforced. */
  async shadowRestrictKey (id: string, change: KeyRestrictionChange): Promise<void> {
    await shadows.shadowRestrictKey(this.a, id, change)
  }

  async promoteShadowRestriction (id: string): Promise<void> {
    await shadows.promoteShadowRestriction(this.a, id)
  }

  async dropShadowRestriction (id: string): Promise<void> {
    await shadows.dropShadowRestriction(this.a, id)
  }

  async setKeyLimit (id: string, limit: string | null): Promise<{ changed: boolean }> {
    return await keys.setKeyLimit(this.a, id, limit)
  }

  /** A key's quota (set, or `null`: removed) and credits added (admin only, docs/quotas.md). */
  async meterKey (id: string, change: meters.MeterChange): Promise<meters.MeterChanged> {
    return await meters.meterKey(this.a, id, change)
  }

  async meterOrg (org: string, change: meters.MeterChange): Promise<meters.MeterChanged> {
    return await meters.meterOrg(this.a, org, change)
  }

  /** A key's allowance and its org's, as they stand. */
  async keyQuota (id: string): Promise<KeyQuotaView> {
    return await meters.keyQuota(this.a, id)
  }

  async importKeys (inputs: readonly imports.ImportInput[]): Promise<Warned<imports.ImportedKey[]>> {
    return await imports.importKeys(this.a, inputs)
  }

  async reportLeaked (reports: readonly leaks.LeakReport[]): Promise<leaks.LeakOutcome[]> {
    return await leaks.reportLeaked(this.a, reports)
  }

  // ---- users, roles, orgs ----------------------------------------------------

  async putUser (
    id: string,
    input: users.UserInput,
    o: { createOnly?: boolean } = {}
  ): Promise<Warned<{ created: boolean, org: string }>> {
    return await users.putUser(this.a, id, input, o)
  }

  async setUserStatus (
    id: string,
    status: 'active' | 'deactivated',
    o: { revokeCreatedKeys?: boolean | undefined } = {}
  ): Promise<users.UserStatusChange> {
    return await users.setUserStatus(this.a, id, status, o)
  }

  async putRole (
    name: string,
    permissions: string[],
    description?: string,
    rateLimit?: string | null
  ): Promise<RoleView> {
    return await roles.putRole(this.a, name, permissions, description, rateLimit)
  }

  async deleteRole (name: string, force: boolean): Promise<{ users: string[], keys: string[] }> {
    return await roles.deleteRole(this.a, name, force)
  }

  async putOrg (org: string, input: orgs.OrgInput): Promise<OrgView> {
    return await orgs.putOrg(this.a, org, input)
  }

  // ---- identities (docs/identities.md) ----------------------------------------

  async putIdentity (
    id: string, input: identities.IdentityInput
  ): Promise<{ created: boolean, identity: IdentityView }> {
    return await identities.putIdentity(this.a, id, input)
  }

  async deleteIdentity (id: string, force: boolean): Promise<{ revoked: string[] }> {
    return await identities.deleteIdentity(this.a, id, force)
  }

  async meterIdentity (id: string, change: meters.MeterChange): Promise<meters.MeterChanged> {
    return await identities.meterIdentity(this.a, id, change)
  }

  async showIdentity (id: string): Promise<IdentityView> {
    return await identities.showIdentity(this.a, id)
  }

  async listIdentities (org?: string): Promise<IdentityView[]> {
    return await identities.listIdentities(this.a, org)
  }

  async identityKeys (id: string): Promise<KeyView[]> { return await identities.identityKeys(this.a, id) }
  async identityUsage (id: string, range: UsageRange): Promise<{ keys: number, points: UsagePoint[] }> {
    return await identities.identityUsage(this.a, id, range)
  }

  /** An SSO sign-in, audited as `session.begin` with the claim that matched. */
  async recordSignIn (user: string, org: string, by: { claim: 'sub' | 'email', value: string }): Promise<void> {
    await audit.recordSignIn(this.a, user, org, by)
  }

  // ---- the registry as code ------------------------------------------------

  async planRegistry (file: RegistryFile, prune: boolean): Promise<ApplyResult> {
    return await registry.planRegistryFile(this.a, file, prune)
  }

  async applyRegistry (file: RegistryFile, o: registry.ApplyOptions): Promise<ApplyResult> {
    return await registry.applyRegistryFile(this.a, file, o)
  }

  async exportRegistry (o: { org?: string | undefined } = {}): Promise<registry.RegistryExport> {
    return await registry.exportRegistry(this.a, o)
  }

  // ---- webhooks ------------------------------------------------------------

  async addWebhook (input: webhooks.WebhookInput): Promise<CreatedWebhook> {
    return await webhooks.addWebhook(this.a, input)
  }

  async listWebhooks (): Promise<WebhookView[]> { return await webhooks.listWebhooks(this.a) }
  async showWebhook (id: string): Promise<WebhookView> { return await webhooks.showWebhook(this.a, id) }
  async removeWebhook (id: string): Promise<void> { await webhooks.removeWebhook(this.a, id) }
  async testWebhook (id: string): Promise<{ delivery: string }> { return await webhooks.testWebhook(this.a, id) }
  async webhookDeliveries (id: string, limit: number): Promise<DeliveryView[]> {
    return await webhooks.webhookDeliveries(this.a, id, limit)
  }

  async resendDelivery (id: string, delivery: string): Promise<void> {
    await webhooks.resendDelivery(this.a, id, delivery)
  }

  // ---- the audit trail -----------------------------------------------------

  async readAudit (sinceMs?: number): Promise<AuditEntry[]> {
    return await audit.readAudit(this.a, sinceMs)
  }

  async pageAudit (q: audit.AuditQuery): Promise<audit.AuditPage<AuditEntry>> {
    return await audit.pageAudit(this.a, q)
  }

  async readRefusals (q: audit.AuditQuery): Promise<audit.AuditPage<RefusalAggregate>> {
    return await audit.readRefusals(this.a, q)
  }

  async migrateCreatedBy (): Promise<{ rewritten: string[], unindexed: string[] }> {
    return await audit.migrateCreatedBy(this.a)
  }

  /** The audit export (src/admin/audit-export/): its lease, what is not yet shipped, the cursor's move. */
  get auditExport (): {
    holdLease: (token: string, ms: number) => Promise<boolean>
    releaseLease: (token: string) => Promise<void>
    pending: (count: number) => Promise<{ cursor: string | undefined, entries: AuditEntry[] }>
    shipped: (token: string, id: string) => Promise<boolean>
  } {
    const a = this.a
    return {
      holdLease: async (token, ms) => await auditExport.holdLease(a, token, ms),
      releaseLease: async (token) => { await auditExport.releaseLease(a, token) },
      pending: async (count) => await auditExport.pending(a, count),
      shipped: async (token, id) => await auditExport.shipped(a, token, id)
    }
  }
}
