/**
 * Every admin write, one call each, for every front end (the admin API's routes, the
 * CLI's commands, and through the API the console). Each runs, in this order:
 *
 *   1. who may      the scope rules for the caller (policy/scope-rules.ts); the CLI acts
 *                   as a full admin. A refusal is audited as `denied: <why>`.
 *   2. what it is   the write's references and grammar (policy/write-checks.ts), every
 *                   problem at once. A refusal is audited as `error: <why>`.
 *   3. the write    the registry store, which checks its own input again, writes the
 *                   record, its indexes and its audit entry in one transaction, and
 *                   audits its own refusals.
 *
 * A write that names an org with no record is done, and returns a warning.
 */
import { AdminError, type AdminStore, type CreatedKey, type ErrorDetail, type ImportedKey, type ImportInput, importRefused, type KeyRestrictionChange, lineProblem, type LeakOutcome, type OrgInput, type OrgView, type RotatedKey, type UserStatusChange } from './store/index.js'
import type { ApplyOptions, ApplyResult } from './as-code/registry-apply.js'
import type { RegistryFile } from './as-code/registry-file.js'
import type { AdminRules, KeyRequest } from './policy/scope-rules.js'
import { checkKeyReferences, checkRolePermissions, checkUserReferences } from './policy/write-checks.js'

/** A write's result, with what the caller should know though nothing was refused. */
export interface Warned<T> {
  result: T
  warnings: ErrorDetail[]
}

export interface UserInput {
  org: string
  role: string
  name?: string | undefined
  email?: string | undefined
}

export class AdminActions {
  constructor (readonly store: AdminStore, readonly rules: AdminRules) {}

  // ---- keys ----------------------------------------------------------------

  async createKey (r: KeyRequest): Promise<Warned<CreatedKey>> {
    const input = await this.rules.keyToCreate(r)
    const target = input.type === 'personal' ? `user:${input.user ?? ''}` : `role:${input.role ?? ''}`
    const warnings = await this.checked('key.create', target, async () => await checkKeyReferences(this.store, input))
    return { result: await this.store.createKey(input), warnings }
  }

  /**
   * Keys brought from another system (registry/admin/imports.ts), from a file (the CLI)
   * or the admin API. Who may: an admin imports any key; an org admin a record at a time
   * exactly the keys it could create (scope-rules.ts keyToImport: BOT keys of its own
   * org with a role within its grants, its own personal keys; a user of another org is
   * answered as a missing one). Then every record's references are checked as a created
   * key's are. Every problem is named with its record, and nothing is written unless
   * every record is good: a record refused by the scope rules makes it a 403.
   */
  async importKeys (inputs: readonly ImportInput[]): Promise<Warned<ImportedKey[]>> {
    this.rules.requireOrgAdmin('importing keys')
    const problems: ErrorDetail[] = []
    const warnings: ErrorDetail[] = []
    const allowed: ImportInput[] = []
    let forbidden: AdminError | undefined
    for (const input of inputs) {
      try {
        const checked = await this.rules.keyToImport(input)
        warnings.push(...(await checkKeyReferences(this.store, checked)).map((w) => lineProblem(input.place, w.field ?? 'key', w.reason)))
        allowed.push(checked)
      } catch (err: unknown) {
        if (!(err instanceof AdminError)) throw err
        if (err.kind === 'forbidden') forbidden ??= err
        for (const d of err.details ?? [{ reason: err.message }]) problems.push(lineProblem(input.place, d.field === 'expires_in' ? 'expires_at' : d.field ?? 'record', d.reason))
      }
    }
    if (forbidden !== undefined) throw importRefused(problems, 'forbidden', forbidden.needs)
    if (problems.length > 0) {
      await this.store.recordRefused('key.import', `keys:${inputs.length}`, `${problems.length} problem(s)`, this.rules.s.scope === 'admin' ? undefined : this.rules.s.org).catch(() => {})
      throw importRefused(problems)
    }
    return { result: await this.store.importKeys(allowed), warnings }
  }

  async revokeKey (id: string): Promise<{ changed: boolean }> {
    // (an admin's attempt on a missing key is audited by the store)
    if (!this.rules.isAdmin) await this.rules.manageableKey(id, 'key.revoke')
    return await this.store.revokeKey(id)
  }

  async rotateKey (id: string, graceMs: number): Promise<RotatedKey> {
    if (!this.rules.isAdmin) await this.rules.manageableKey(id, 'key.rotate')
    return await this.store.rotateKey(id, graceMs, { botMaxTtlMs: this.rules.botMaxTtlMs })
  }

  /**
   * The key's scope and addresses (a list sets one, `null` removes it, undefined keeps
   * it): an admin any key; an org admin its org's keys acting within its grants; a self
   * principal its own user's keys. A scope is within the caller's own grants.
   */
  async restrictKey (id: string, change: KeyRestrictionChange): Promise<{ changed: boolean }> {
    if (!this.rules.isAdmin) {
      const view = await this.rules.manageableKey(id, 'key.restrict')
      await this.rules.checkScope('key.restrict', `key:${id}`, change.scope, view)
    }
    return await this.store.restrictKey(id, change)
  }

  /**
   * Leaked keys reported by a scanner: each live one revoked (registry/admin/leaks.ts).
   * An admin revokes every key; an org admin every key of its org it sees, whatever its
   * role (the report holds the key, so its sender holds the key's authority already:
   * revoking only takes access away); a key it does not see is a false positive,
   * exactly like a token that is no key.
   */
  async reportLeaked (tokens: readonly string[], source: string): Promise<LeakOutcome[]> {
    this.rules.requireOrgAdmin('reporting leaked keys')
    const sees = this.rules.isAdmin ? undefined : (key: Parameters<AdminRules['seesKey']>[0]) => this.rules.seesKey(key)
    return await this.store.revokeLeaked(tokens.map((token) => ({ token, source })), { sees })
  }

  /** The key's own rate limit; `null` removes it. Admin only. */
  async setKeyLimit (id: string, limit: string | null): Promise<{ changed: boolean }> {
    this.rules.requireAdmin('a key\'s own rate limit')
    return await this.store.setKeyLimit(id, limit)
  }

  // ---- users ---------------------------------------------------------------

  /** `createOnly`: a new user only (an existing id: conflict), audited as `user.create` */
  async putUser (id: string, input: UserInput, o: { createOnly?: boolean } = {}): Promise<Warned<{ created: boolean }>> {
    await this.rules.checkPutUser(id, input)
    const warnings = await this.checked(o.createOnly === true ? 'user.create' : 'user.put', `user:${id}`, async () => await checkUserReferences(this.store, id, input))
    const fields: { org: string, role: string, name?: string, email?: string } = { org: input.org, role: input.role }
    if (input.name !== undefined) fields.name = input.name
    if (input.email !== undefined) fields.email = input.email
    return { result: await this.store.putUser(id, fields, o), warnings }
  }

  /** Deactivate or activate; `revokeCreatedKeys`: also revoke the BOT keys the user created (those the caller may see). */
  async setUserStatus (id: string, status: 'active' | 'deactivated', o: { revokeCreatedKeys?: boolean | undefined } = {}): Promise<UserStatusChange> {
    if (!this.rules.isAdmin) await this.rules.manageableUser(id, status === 'active' ? 'user.activate' : 'user.deactivate')
    const revoke = status === 'deactivated' ? { revokeCreatedKeys: o.revokeCreatedKeys === true } : {}
    return await this.store.setUserStatus(id, status, { ...revoke, inOrg: this.rules.orgFilter(undefined) ?? undefined })
  }

  // ---- the registry as code (admin only) -----------------------------------

  /** A registry file applied: its records' checks are write-checks.ts's, run by the file's parser (src/registry/as-code/). */
  async applyRegistry (file: RegistryFile, o: ApplyOptions): Promise<ApplyResult> {
    this.rules.requireAdmin('applying a registry file')
    return await this.store.applyRegistry(file, o)
  }

  // ---- roles and orgs (admin only) -----------------------------------------

  /** A description or rate limit not given is kept; `rateLimit: null` removes the limit. */
  async putRole (name: string, permissions: string[], description?: string, rateLimit?: string | null): Promise<void> {
    this.rules.requireAdmin('putting a role')
    await this.checked('role.put', `role:${name}`, async () => { checkRolePermissions(permissions) })
    await this.store.putRole(name, permissions, description, rateLimit)
  }

  async deleteRole (name: string, force: boolean): Promise<{ users: string[], keys: string[] }> {
    this.rules.requireAdmin('deleting a role')
    return await this.store.deleteRole(name, force)
  }

  async putOrg (org: string, input: OrgInput): Promise<OrgView> {
    this.rules.requireAdmin('an org\'s record')
    return await this.store.putOrg(org, input)
  }

  /** Runs a write's checks; a refusal is counted in the audit trail's refusals (under the caller's own org), then rethrown. */
  private async checked<T> (action: string, target: string, check: () => Promise<T>): Promise<T> {
    try {
      return await check()
    } catch (err: unknown) {
      if (err instanceof AdminError) await this.store.recordRefused(action, target, err.message, this.rules.s.scope === 'admin' ? undefined : this.rules.s.org).catch(() => {})
      throw err
    }
  }
}
