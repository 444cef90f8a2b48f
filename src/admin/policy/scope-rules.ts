/**
 * Who may administer what: the one place that decides it, for every front end (the
 * admin API for each signed-in principal; the CLI, which acts as `keygate:admin`).
 * What any input must be, in every scope, is the registry's (registry/admin/rules.ts),
 * and what it may refer to is write-checks.ts's; these rules add the scopes.
 * A refusal is an AdminError: `forbidden` (the scope does not allow the action; the
 * permission that would is in `needs`), `not_found` (the object is outside the scope:
 * answered exactly as a missing one, so other orgs cannot be probed), or `invalid`.
 *
 *   admin  `keygate:admin`, the admin token, the CLI: everything, in every org
 *   org    `keygate:org:admin`: its own org's users and keys, within its own grants
 *   self   `keygate:keys:self` on a personal key: its own user's keys
 *
 * "Within its own grants": an org or self principal may give a user or a key only a
 * role whose every permission its own role grants (so never `keygate:admin`, which it
 * lacks), and may manage a user or a key only while that holds for the user's or the
 * key's role, since managing a key includes rotating it, which hands out its authority.
 * A personal key is created and rotated only by its own user or an admin: an org admin
 * lists, shows, restricts and revokes its org's personal keys, but a key it minted for
 * another user would act as that user, with every later promotion of the user.
 * A key's scope is within the caller's own grants, as a role is; a principal whose own
 * key is scoped makes personal keys no wider than that scope.
 * Rate limits (a key's own, a role's, an org's) are an admin's alone: an org admin
 * could otherwise raise its own org's, and a key's own limit replaces the default.
 * Importing a key is creating it (its importer knows its token): keyToImport is
 * keyToCreate. A leak report revokes any key the caller sees (seesKey), whatever its
 * role: the report holds the key, so revoking it only takes access away.
 * Refused changes are audited (`denied: <why>`); refused reads are not.
 */
import { userActor } from '../model/actors.js'
import { AdminError, ifMissing, type AdminStore, type ErrorDetail, type CreateKeyInput, type ImportInput, type KeyView, type UserView } from '../store/index.js'
import { checkKeyExclusions, checkKeyRequirements, ownsKey } from './rules.js'
import { Grants, parseTimestamp, scopedGrants } from '../../registry/records.js'

export const ADMIN_PERMISSION = 'keygate:admin'
export const ORG_ADMIN_PERMISSION = 'keygate:org:admin'
export const SELF_PERMISSION = 'keygate:keys:self'

export type ScopeName = 'admin' | 'org' | 'self'

/**
 * Why an org admin neither creates nor rotates a personal key of another user: the key
 * acts as its user (with the user's role as it is at each request, so with every later
 * promotion), so whoever mints it can act as that user.
 */
const PERSONAL_KEY_REFUSAL = 'a personal key acts as its user: only that user or an admin creates or rotates one'

export type AdminScope =
  | { scope: 'admin', user?: undefined }
  | { scope: 'org', org: string, grants: Grants, user: string | undefined }
  | { scope: 'self', org: string, grants: Grants, user: string }

/** The admin token and the CLI. */
export const FULL_ADMIN: AdminScope = { scope: 'admin' }

/** A signed-in key's scope from its grants (by name: no wildcard grants a `keygate:` permission); undefined: none. */
export function scopeOfGrants (grants: Grants, keyType: 'personal' | 'bot'): ScopeName | undefined {
  if (grants.has(ADMIN_PERMISSION)) return 'admin'
  if (grants.has(ORG_ADMIN_PERMISSION)) return 'org'
  if (keyType === 'personal' && grants.has(SELF_PERMISSION)) return 'self'
  return undefined
}

/** What a key creation asks for, before the rules fill in defaults. */
export interface KeyRequest {
  type: 'personal' | 'bot'
  user?: string | undefined
  role?: string | undefined
  org?: string | undefined
  name?: string | undefined
  expiresInMs?: number | undefined
  /** a user id: the key is recorded as created by that user (admin only) */
  createdBy?: string | undefined
  /** the key's own rate limit (admin only: a key's own limit replaces the default) */
  rateLimit?: string | undefined
  /** the permissions the key is narrowed to (within the caller's own grants) */
  scope?: readonly string[] | undefined
  /** the client addresses the key may be used from */
  allowedCidrs?: readonly string[] | undefined
}

export class AdminRules {
  /**
   * `selfServiceMaxTtlMs`: the longest a BOT key created by an org or self principal
   * lives (config `admin.self_service_max_ttl`).
   */
  constructor (readonly s: AdminScope, private readonly store: AdminStore, private readonly selfServiceMaxTtlMs: number) {}

  get isAdmin (): boolean {
    return this.s.scope === 'admin'
  }

  /** The longest a BOT key this caller creates (or rotates into being) may live; undefined: no limit. */
  get botMaxTtlMs (): number | undefined {
    return this.s.scope === 'admin' ? undefined : this.selfServiceMaxTtlMs
  }

  /** Roles (put, delete) and the permission catalogue: admin only. */
  requireAdmin (what: string): void {
    if (this.s.scope !== 'admin') throw new AdminError(`${what} needs ${ADMIN_PERMISSION}`, 'forbidden', ADMIN_PERMISSION)
  }

  /** Users and the audit trail: an org admin for its own org. */
  requireOrgAdmin (what: string): void {
    if (this.s.scope === 'self') throw new AdminError(`${what} needs ${ORG_ADMIN_PERMISSION}`, 'forbidden', ORG_ADMIN_PERMISSION)
  }

  /** The org a listing is limited to: the caller's own for org and self principals; `null`: an org it may not see (empty list). */
  orgFilter (org: string | undefined): string | undefined | null {
    if (this.s.scope === 'admin') return org
    if (org !== undefined && org !== this.s.org) return null
    return this.s.org
  }

  /** The user filter of a key listing: a self principal sees its own user's keys only; `null`: an empty list. */
  keyUserFilter (user: string | undefined): string | undefined | null {
    if (this.s.scope !== 'self') return user
    if (user !== undefined && user !== this.s.user) return null
    return this.s.user
  }

  // ---- roles ---------------------------------------------------------------

  /** The roles the caller may give: all for an admin, those within its grants otherwise. */
  givableRoles<R extends { permissions: readonly string[] }> (roles: R[]): R[] {
    const s = this.s
    if (s.scope === 'admin') return roles
    return roles.filter((r) => s.grants.hasAll(r.permissions))
  }

  // ---- users ---------------------------------------------------------------

  /** The user, if the caller may see it (org: its org; self: its own user); otherwise 404 as if missing. */
  async visibleUser (id: string): Promise<UserView> {
    const user = await this.store.showUser(id)
    const s = this.s
    if (s.scope === 'org' && user.org !== s.org) throw new AdminError(`user "${id}" is not in org ${s.org}`, 'not_found')
    if (s.scope === 'self' && id !== s.user) throw new AdminError(`user "${id}" is not the caller's own user`, 'not_found')
    return user
  }

  /** A user the caller may change (deactivate, activate, give keys to): visible, and its role within the caller's grants. */
  async manageableUser (id: string, action: string): Promise<UserView> {
    this.requireOrgAdmin(action)
    const user = await this.denyingReads(action, `user:${id}`, async () => await this.visibleUser(id))
    await this.withinGrants(action, `user:${id}`, user.role, `user "${id}" has role "${user.role ?? ''}", beyond the caller's own permissions`)
    return user
  }

  /** A user put: an org admin puts users of its own org only, with a role within its grants; an existing user elsewhere is 404. */
  async checkPutUser (id: string, input: { org: string, role: string }): Promise<void> {
    this.requireOrgAdmin('putting a user')
    const s = this.s
    if (s.scope !== 'org') return
    const target = `user:${id}`
    const existing = await this.store.showUser(id).catch(ifMissing(undefined))
    if (existing !== undefined) await this.manageableUser(id, 'user.put')
    if (input.org !== s.org) return await this.deny('user.put', target, 'forbidden', `an org admin puts users in its own org (${s.org}) only`)
    await this.withinGrants('user.put', target, input.role, `role "${input.role}" is not within the caller's own permissions`)
  }

  // ---- keys ----------------------------------------------------------------

  /** The key, if the caller may see it (org: in its org; self: its user's); otherwise 404 as if missing. */
  async visibleKey (id: string): Promise<KeyView> {
    const view = await this.store.showKey(id)
    const s = this.s
    if (s.scope === 'org' && view.org !== s.org) throw new AdminError(`key "${id}" is not in org ${s.org}`, 'not_found')
    if (s.scope === 'self' && !ownsKey(s.user, view)) throw new AdminError(`key "${id}" is not a key of user ${s.user}`, 'not_found')
    return view
  }

  /** Whether the caller may read a key with these owner fields (visibleKey's rule, for a key read in bulk). */
  seesKey (key: { type: string, org: string, user?: string | undefined, created_by?: string | undefined }): boolean {
    const s = this.s
    if (s.scope === 'org') return key.org === s.org
    if (s.scope === 'self') return ownsKey(s.user, key)
    return true
  }

  /**
   * A key the caller may revoke by id, rotate or restrict: visible, and
   * (org admin) acting with a role within its grants. A self principal rotates its own
   * user's personal keys only; an org admin never rotates another user's personal key. A rotation by an org
   * or self principal hands out the key's authority again, so what the key may do (its
   * role narrowed by its scope) must be within the caller's own grants.
   */
  async manageableKey (id: string, action: 'key.revoke' | 'key.rotate' | 'key.restrict'): Promise<KeyView> {
    const view = await this.denyingReads(action, `key:${id}`, async () => await this.visibleKey(id))
    if (this.s.scope === 'self' && action === 'key.rotate' && view.type !== 'personal') {
      return await this.deny(action, `key:${id}`, 'forbidden', `rotating a BOT key needs ${ORG_ADMIN_PERMISSION}`, ORG_ADMIN_PERMISSION)
    }
    if (this.s.scope === 'org' && action === 'key.rotate' && view.type === 'personal' && view.user !== this.s.user) {
      return await this.deny(action, `key:${id}`, 'forbidden', PERSONAL_KEY_REFUSAL, ADMIN_PERMISSION, [{ reason: PERSONAL_KEY_REFUSAL }])
    }
    if (this.s.scope === 'org' || (this.s.scope === 'self' && action === 'key.rotate')) {
      const role = view.type === 'personal' ? (await this.store.showUser(view.user ?? '').catch(ifMissing(undefined)))?.role : view.role
      await this.withinGrants(action, `key:${id}`, role, `key "${id}" acts with role "${role ?? ''}", beyond the caller's own permissions`, view.scope)
    }
    return view
  }

  /**
   * A scope the caller may give a key: every permission of it within the caller's own
   * grants (an admin: any). Removing a key's scope (`null`) gives it its whole role: then
   * that role must be within the caller's grants.
   */
  async checkScope (action: string, target: string, scope: readonly string[] | undefined | null, key?: KeyView): Promise<void> {
    const s = this.s
    if (s.scope === 'admin' || scope === undefined) return
    if (scope === null) {
      if (key === undefined) return
      const role = key.type === 'personal' ? (await this.store.showUser(key.user ?? '').catch(ifMissing(undefined)))?.role : key.role
      return await this.withinGrants(action, target, role, `without a scope, key "${key.id}" would act with role "${role ?? ''}", beyond the caller's own permissions`)
    }
    const beyond = scope.filter((p) => !s.grants.has(p))
    if (beyond.length === 0) return
    const why = `a key's scope is within the caller's own permissions; beyond them: ${beyond.join(' ')}`
    await this.deny(action, target, 'forbidden', why, undefined, [{ field: 'scope', reason: why }])
  }

  /** What a key creation may create: the request checked for shape and for scope, with its defaults filled in. */
  async keyToCreate (r: KeyRequest): Promise<CreateKeyInput> {
    checkKeyExclusions(r)
    const s = this.s
    const target = r.type === 'personal' ? `user:${r.user ?? s.user ?? ''}` : `role:${r.role ?? ''}`

    if (s.scope === 'admin') {
      checkKeyRequirements(r)
      // (no creator given: the store records the actor)
      const createdBy = r.createdBy === undefined ? undefined : userActor(r.createdBy)
      return { type: r.type, user: r.user, role: r.role, org: r.org, name: r.name, expiresInMs: r.expiresInMs, createdBy, rateLimit: r.rateLimit, scope: r.scope, allowedCidrs: r.allowedCidrs }
    }
    await this.checkScope('key.create', target, r.scope)

    if (r.rateLimit !== undefined) {
      return await this.deny('key.create', target, 'forbidden', 'only an admin sets a key\'s rate limit', ADMIN_PERMISSION)
    }

    if (r.createdBy !== undefined && r.createdBy !== s.user) {
      return await this.deny('key.create', target, 'forbidden', 'only an admin records another user as a key\'s creator', ADMIN_PERMISSION)
    }
    // a personal key acts as its user: what it creates is that user's
    const createdBy = s.user === undefined ? undefined : userActor(s.user)
    if (r.type === 'personal') {
      checkKeyRequirements({ type: 'personal', user: r.user ?? s.user })
      const user = (r.user ?? s.user) as string
      if (s.scope === 'self' && user !== s.user) {
        return await this.deny('key.create', target, 'forbidden', `${SELF_PERMISSION} creates personal keys for its own user (${s.user}) only`, ORG_ADMIN_PERMISSION)
      }
      if (s.scope === 'org' && user !== s.user) {
        // (a user outside the org answers exactly as a missing one, here too)
        await this.denyingReads('key.create', target, async () => await this.visibleUser(user)).catch(missingAs('user', `user "${user}" does not exist`))
        return await this.deny('key.create', target, 'forbidden', PERSONAL_KEY_REFUSAL, ADMIN_PERMISSION, [{ field: 'user', reason: PERSONAL_KEY_REFUSAL }])
      }
      // a key made by a principal narrower than its user's role (a scoped key) is no wider than that principal
      const scope = r.scope ?? (await this.roleWithinGrants(s.grants, (await this.store.showUser(user).catch(ifMissing(undefined)))?.role) ? undefined : [...s.grants.permissions])
      return { type: 'personal', user, name: r.name, expiresInMs: r.expiresInMs, createdBy, scope, allowedCidrs: r.allowedCidrs }
    }

    const org = r.org ?? s.org
    checkKeyRequirements({ type: 'bot', role: r.role, org })
    if (org !== s.org) return await this.deny('key.create', target, 'forbidden', `BOT keys are created in the caller's own org (${s.org}) only`)
    // a role the caller may not see (missing, or broader than its grants) is refused alike
    const role = r.role as string
    await this.withinGrants('key.create', target, role, `role "${r.role}" is not within the caller's own permissions (no escalation through a BOT key)`)
    const max = this.selfServiceMaxTtlMs
    if (r.expiresInMs !== undefined && r.expiresInMs > max) {
      const why = `a BOT key created without ${ADMIN_PERMISSION} expires within ${formatMs(max)} at most`
      throw new AdminError(why, 'invalid', undefined, [{ field: 'expires_in', reason: why }])
    }
    return { type: 'bot', role, org, name: r.name, expiresInMs: r.expiresInMs, expiresWithinMs: max, createdBy, scope: r.scope, allowedCidrs: r.allowedCidrs }
  }

  /**
   * What a key import may create, a record at a time: exactly what creating that key
   * would (keyToCreate) for the caller, its expiry (`expires_at`) taken as the
   * equivalent `expires_in`. An admin imports any key as it is.
   */
  async keyToImport (input: ImportInput, now = Date.now()): Promise<ImportInput> {
    if (this.s.scope === 'admin') return input
    const at = input.expiresAt === undefined ? undefined : parseTimestamp(input.expiresAt)
    const created = await this.keyToCreate({ type: input.type, user: input.user, role: input.role, org: input.org, name: input.name, expiresInMs: at === undefined ? undefined : Math.max(0, at - now) })
    return { ...input, user: created.user, role: created.role, org: created.org, createdBy: created.createdBy, scope: created.scope, expiresWithinMs: created.expiresWithinMs }
  }

  // ---- internals -----------------------------------------------------------

  /**
   * Refuses unless every permission of the role (narrowed by `keyScope`, a key's scope,
   * by the one intersection: scopedGrants) is within the caller's grants; a missing
   * role is refused alike.
   */
  private async withinGrants (action: string, target: string, role: string | undefined, why: string, keyScope?: readonly string[]): Promise<void> {
    const s = this.s
    if (s.scope === 'admin') return
    if (!await this.roleWithinGrants(s.grants, role, keyScope)) await this.deny(action, target, 'forbidden', why)
  }

  private async roleWithinGrants (grants: Grants, role: string | undefined, keyScope?: readonly string[]): Promise<boolean> {
    const found = role === undefined ? undefined : await this.store.showRole(role).catch(ifMissing(undefined))
    if (found === undefined) return false
    const effective = scopedGrants(new Grants(found.permissions), keyScope === undefined ? undefined : new Grants(keyScope))
    return grants.hasAll(effective.permissions)
  }

  /** A visibility check inside a change: its 404 is audited as a refused attempt too. */
  private async denyingReads<T> (action: string, target: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err: unknown) {
      if (err instanceof AdminError && err.kind === 'not_found' && this.s.scope !== 'admin') await this.store.recordDenied(action, target, err.message, this.s.org)
      throw err
    }
  }

  /**
   * Audits the refused attempt (result `denied: ...`) under the caller's own org (an
   * org admin reads what its members attempted; another org learns nothing of them),
   * then refuses it.
   */
  private async deny (action: string, target: string, kind: 'forbidden' | 'not_found', why: string, needs?: string, details?: ErrorDetail[]): Promise<never> {
    await this.store.recordDenied(action, target, why, this.s.scope === 'admin' ? undefined : this.s.org)
    throw new AdminError(why, kind, kind === 'forbidden' ? needs ?? this.needed() : undefined, details)
  }

  private needed (): string {
    return this.s.scope === 'self' ? ORG_ADMIN_PERMISSION : ADMIN_PERMISSION
  }
}

/** `.catch()`: a record missing, or outside the caller's scope, refused with one detail that says only that it does not exist. */
function missingAs (field: string, reason: string): (err: unknown) => never {
  return (err) => {
    if (err instanceof AdminError && err.kind === 'not_found') throw new AdminError(err.message, 'not_found', undefined, [{ field, reason }])
    throw err
  }
}

function formatMs (ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000]] as const) if (ms % size === 0) return `${ms / size}${unit}`
  return `${Math.round(ms / 1000)}s`
}
