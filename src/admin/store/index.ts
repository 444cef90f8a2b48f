/**
 * Writes to and admin reads of the registry, shared by every admin front end (the
 * CLI and the admin API): one implementation, several front ends. Who may do what
 * is decided before a call reaches the store, by the admin plane's scope rules (src/admin/policy/scope-rules.ts);
 * what any input must be, by the rules (rules.ts), which the store applies itself.
 *
 *   roles.ts      roles                    keys.ts       create, revoke, show, list, limit, restrict
 *   users.ts      users and their status   rotation.ts   rotate (WATCHed)
 *   orgs.ts       org records (rate limit) views.ts      what admins see (TypeBox)
 *   leaks.ts      leaked keys revoked      ../as-code/   registry files: export, plan, apply
 *   audit-log.ts  the audit trail
 *
 * Each change that touches several Redis keys (a record, its index sets and the
 * audit entry) is one MULTI/EXEC transaction (transactions.ts). Every change is
 * audited, and every refused attempt is counted in the audit trail's refusal
 * aggregates. Listing uses the index sets, never KEYS or SCAN. Nothing here returns
 * a secret or a hash, except a created key's secret, once.
 */
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import { AuditLog, DEFAULT_AUDIT_OPTIONS, type AuditOptions, type AuditPage, type AuditQuery } from './audit-log.js'
import { migrateCreatedBy } from './created-by-migration.js'
import { revokeLeaked, type LeakOptions, type LeakOutcome, type LeakReport } from './leaks.js'
import { createKey, keysOverPolicy, listKeys, restrictKey, revokeKey, setKeyLimit, showKey, type CreateKeyInput, type KeyFilter, type KeyRestrictionChange } from './keys.js'
import { listKeyPage, type KeyPage } from './key-pages.js'
import { listOrgs, orgKeyCap, putOrg, showOrg, type OrgInput } from './orgs.js'
import { deleteRole, listRoles, putRole, showRole } from './roles.js'
import { rotateKey } from './rotation.js'
import { importKeys, type ImportedKey, type ImportInput } from './imports.js'
import type { StoreContext } from './transactions.js'
import { applyFile, planFile, type ApplyOptions, type ApplyResult } from '../as-code/registry-apply.js'
import { exportRegistry } from '../as-code/registry-export.js'
import type { RegistryFile } from '../as-code/registry-file.js'
import { listUsers, putUser, setUserStatus, showUser, type UserStatusChange } from './users.js'
import type { AuditEntry, CreatedKey, KeyView, OrgView, RefusalAggregate, RoleView, RotatedKey, UserView } from '../model/views.js'
import { AdminError } from '../model/errors.js'

export { AdminError, CODE_OF_KIND, ifMissing, type AdminErrorKind, type ErrorDetail } from '../model/errors.js'
export { DEFAULT_GRACE_MS, KEY_NAME_MAX, NAME, nameProblem, ownsKey } from '../policy/rules.js'
export { auditOptions, CURSOR, type AuditOptions, type AuditPage, type AuditQuery } from './audit-log.js'
export type { CreateKeyInput, KeyFilter, KeyRestrictionChange } from './keys.js'
export { KEY_PAGE_DEFAULT, KEY_PAGE_MAX, type KeyPage } from './key-pages.js'
export { IMPORTED_KEY_MAX, importRefused, lineProblem, parseImportLines, parseImportRecords, type ImportedKey, type ImportInput } from './imports.js'
export { LEAK_SOURCE_MAX, type LeakLabel, type LeakOptions, type LeakOutcome, type LeakReport } from './leaks.js'
export { ORG_NAME_MAX, type OrgInput } from './orgs.js'
export type { UserStatusChange } from './users.js'
export type { AuditEntry, CreatedKey, KeyType, KeyView, OrgView, RefusalAggregate, RoleView, RotatedKey, UserView } from '../model/views.js'

export class AdminStore {
  private readonly ctx: StoreContext

  constructor (redis: RegistryClient, keys: RedisKeys, keyPrefix: string, actor: string, auditOptions: AuditOptions = DEFAULT_AUDIT_OPTIONS) {
    this.ctx = { redis, keys, keyPrefix, actor, audit: new AuditLog(redis, keys, keyPrefix, actor, auditOptions) }
  }

  // ---- roles ---------------------------------------------------------------

  /** A description or rate limit not given is kept; `rateLimit: null` removes the limit. */
  async putRole (name: string, permissions: string[], description?: string, rateLimit?: string | null): Promise<void> {
    await putRole(this.ctx, name, permissions, description, rateLimit)
  }

  async listRoles (): Promise<RoleView[]> {
    return await listRoles(this.ctx)
  }

  async showRole (name: string): Promise<RoleView> {
    return await showRole(this.ctx, name)
  }

  /** Refuses while users or BOT keys reference the role, naming them, unless `force`. */
  async deleteRole (name: string, force: boolean): Promise<{ users: string[], keys: string[] }> {
    return await deleteRole(this.ctx, name, force)
  }

  // ---- orgs ----------------------------------------------------------------

  /** The org record: a field not given is kept; `rateLimit: null` removes the limit. Returns the record as written. */
  async putOrg (org: string, input: OrgInput): Promise<OrgView> {
    return await putOrg(this.ctx, org, input)
  }

  /** Org records, each with its limit's use now; `only`: that org's alone. */
  async listOrgs (only?: string): Promise<OrgView[]> {
    return await listOrgs(this.ctx, only)
  }

  async showOrg (org: string): Promise<OrgView> {
    return await showOrg(this.ctx, org)
  }

  /** The org's key policy (`key_max_ttl`), in ms; undefined: none, or malformed (keys in it are refused then). */
  async orgKeyCap (org: string): Promise<number | undefined> {
    try {
      return await orgKeyCap(this.ctx, this.ctx.redis, org)
    } catch (err) {
      if (err instanceof AdminError) return undefined
      throw err
    }
  }

  /** Whether the org has a record (an org needs none: users and keys may name any org). */
  async hasOrgRecord (org: string): Promise<boolean> {
    return await this.ctx.redis.exists(this.ctx.keys.org(org)) === 1
  }

  // ---- users ---------------------------------------------------------------

  /** `createOnly`: a new user only, audited as `user.create` */
  async putUser (id: string, input: { org: string, role: string, name?: string, email?: string }, o: { createOnly?: boolean } = {}): Promise<{ created: boolean }> {
    return await putUser(this.ctx, id, input, o)
  }

  /** Deactivating stops the user's personal keys; its BOT keys are reported, and revoked only on request (users.ts). */
  async setUserStatus (id: string, status: 'active' | 'deactivated', o: { revokeCreatedKeys?: boolean, inOrg?: string } = {}, now = Date.now()): Promise<UserStatusChange> {
    return await setUserStatus(this.ctx, id, status, o, now)
  }

  async listUsers (filter: { org?: string } = {}): Promise<UserView[]> {
    return await listUsers(this.ctx, filter)
  }

  async showUser (id: string): Promise<UserView> {
    return await showUser(this.ctx, id)
  }

  // ---- keys ----------------------------------------------------------------

  async createKey (input: CreateKeyInput, now = Date.now()): Promise<CreatedKey> {
    return await createKey(this.ctx, input, now)
  }

  /** Imported keys (imports.ts): every line written, or none. */
  async importKeys (inputs: readonly ImportInput[], now = Date.now()): Promise<ImportedKey[]> {
    return await importKeys(this.ctx, inputs, now)
  }

  /** `botMaxTtlMs`: a new BOT key expires within this (a self-service rotation). */
  async rotateKey (id: string, graceMs: number, o: { botMaxTtlMs?: number | undefined } = {}, now = Date.now()): Promise<RotatedKey> {
    return await rotateKey(this.ctx, id, graceMs, o.botMaxTtlMs, now)
  }

  async revokeKey (id: string, now = Date.now()): Promise<{ changed: boolean }> {
    return await revokeKey(this.ctx, id, now)
  }

  /** The active keys of an org that outlive its key policy (`key_max_ttl`); none without one. */
  async keysOverPolicy (org: string, now = Date.now()): Promise<KeyView[]> {
    return await keysOverPolicy(this.ctx, org, now)
  }

  /** The key's scope and addresses: a list sets one, `null` removes it, undefined keeps it. */
  async restrictKey (id: string, change: KeyRestrictionChange): Promise<{ changed: boolean }> {
    return await restrictKey(this.ctx, id, change)
  }

  /**
   * Revokes each token that is a live key (`revoked_reason leaked`, `leak_source`), one
   * change and one audit entry `key.leaked` each; a label per token, in order (leaks.ts).
   */
  async revokeLeaked (reports: readonly LeakReport[], o: LeakOptions = {}, now = Date.now()): Promise<LeakOutcome[]> {
    return await revokeLeaked(this.ctx, reports, o, now)
  }

  /** The key's own rate limit; `null` removes it. */
  async setKeyLimit (id: string, limit: string | null): Promise<{ changed: boolean }> {
    return await setKeyLimit(this.ctx, id, limit)
  }

  async showKey (id: string, now = Date.now()): Promise<KeyView> {
    return await showKey(this.ctx, id, now)
  }

  /** Keys by user, by org, or all; `unusedForMs`: not used (nor created) within that long; `q`: a search. */
  async listKeys (filter: KeyFilter = {}, now = Date.now()): Promise<KeyView[]> {
    return await listKeys(this.ctx, filter, now)
  }

  /** One page of that listing, in key id order, after `cursor` (key-pages.ts). */
  async listKeyPage (filter: KeyFilter, page: { limit: number, cursor?: string | undefined }, now = Date.now()): Promise<KeyPage> {
    return await listKeyPage(this.ctx, filter, page, now)
  }

  /** Types every `created_by` and unindexes BOT keys from non-user "owners" (created-by-migration.ts). */
  async migrateCreatedBy (): Promise<{ rewritten: string[], unindexed: string[] }> {
    return await migrateCreatedBy(this.ctx)
  }

  // ---- the registry as code (src/registry/as-code/) ---------------------------

  /** Roles, org records and users as a registry file (YAML); `org`: that org's. */
  async exportRegistry (o: { org?: string | undefined } = {}): Promise<string> {
    return await exportRegistry(this.ctx.redis, this.ctx.keys, o)
  }

  /** What applying `file` would change now, or its problems. */
  async planRegistry (file: RegistryFile, prune: boolean): Promise<ApplyResult> {
    return await planFile(this.ctx, file, prune)
  }

  /** Makes exactly the plan's changes, atomically, audited as `registry.apply`; nothing on any problem. */
  async applyRegistry (file: RegistryFile, o: ApplyOptions): Promise<ApplyResult> {
    return await applyFile(this.ctx, file, o)
  }

  // ---- audit ---------------------------------------------------------------

  /** Every change in range, oldest first (`keygate audit`). */
  async readAudit (sinceMs?: number, now = Date.now()): Promise<AuditEntry[]> {
    return await this.ctx.audit.readAll(sinceMs, now)
  }

  /** One page of changes, newest first (GET /audit). */
  async pageAudit (q: AuditQuery, now = Date.now()): Promise<AuditPage<AuditEntry>> {
    return await this.ctx.audit.page(q, now)
  }

  /** One page of refused attempts, aggregated per minute, newest first (GET /audit/refusals). */
  async readRefusals (q: AuditQuery, now = Date.now()): Promise<AuditPage<RefusalAggregate>> {
    return await this.ctx.audit.refusals(q, now)
  }

  /**
   * Counts an attempt a front end refused before it reached the store (the admin API's
   * permission checks, e.g. a BOT key with a role broader than its creator's) in the
   * refusal aggregates: result `denied: <why>`. `org`: the org of the object concerned,
   * when it comes from the registry or the caller's own (never from the request).
   */
  async recordDenied (action: string, target: string, why: string, org?: string): Promise<void> {
    await this.ctx.audit.refused(action, target, `denied: ${why}`, org)
  }

  /** The same for a write the front ends' checks refused (result `error: <why>`, as the store's own refusals). */
  async recordRefused (action: string, target: string, why: string, org?: string): Promise<void> {
    await this.ctx.audit.refused(action, target, `error: ${why}`, org)
  }
}
