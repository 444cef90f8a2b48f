/**
 * Who may administer what (model/principal.ts names the scopes): the one place that
 * decides it, for every front end, over a snapshot of the records concerned. A refusal
 * is an AdminError: `forbidden` (the scope does not allow the action; the permission
 * that would is in `needs`), `not_found` (the object is outside the scope: answered
 * exactly as a missing one, so other orgs cannot be probed), or `invalid`.
 *
 * "Within its own grants": an org or self principal may give a user or a key only a
 * role whose every permission its own role grants (so never `keygate:admin`, which it
 * lacks), and may manage a user or a key only while that holds for the user's or the
 * key's role, since managing a key includes rotating it, which hands out its authority.
 * A personal key is created and rotated only by its own user or an admin: an org admin
 * lists, shows, restricts and revokes its org's personal keys, but a key it minted for
 * another user would act as that user, with every later promotion of the user.
 * A key's scope is within the caller's own grants, as a role is. Rate limits (a key's
 * own, a role's, an org's) are an admin's alone: an org admin could otherwise raise its
 * own org's, and a key's own limit replaces the default.
 * Refused writes are audited (`denied: <why>`); refused reads are not.
 */
import { Grants, scopedGrants } from '../../registry/records.js'
import { ownsKey, readCreatedBy, type OwnedKey } from '../model/actors.js'
import { AdminError } from '../model/errors.js'
import { ADMIN_PERMISSION, ORG_ADMIN_PERMISSION, type AdminScope } from '../model/principal.js'
import type { Fields, Snapshot } from '../model/snapshot.js'
import { userViewOf, type KeyView, type UserView } from '../model/views.js'
import { denied, denyingReads } from './refusals.js'

/**
 * Why an org admin neither creates nor rotates a personal key of another user: the key
 * acts as its user (with the user's role as it is at each request, so with every later
 * promotion), so whoever mints it can act as that user.
 */
export const PERSONAL_KEY_REFUSAL = 'a personal key acts as its user: only that user or an admin creates or rotates one'

/** What the scope rules read of a key: its owner fields, role and scope. */
export type KeyFacts = Pick<KeyView, 'id' | 'type' | 'org' | 'user' | 'role' | 'created_by' | 'owner' | 'scope'>

/** A key record's facts (a snapshot's fields); undefined when there is no record. */
export function keyFactsOf (id: string, f: Fields | undefined): KeyFacts | undefined {
  if (f?.type === undefined) return undefined
  const facts: KeyFacts = { id, type: f.type, org: f.org ?? '' }
  if (f.user !== undefined && f.user !== '') facts.user = f.user
  if (f.role !== undefined && f.role !== '') facts.role = f.role
  const createdBy = readCreatedBy(f.created_by)
  if (createdBy !== undefined) facts.created_by = createdBy
  if (f.owner !== undefined && f.owner !== '') facts.owner = f.owner
  const scope = (f.scope ?? '').split(/\s+/).filter((p) => p !== '')
  if (scope.length > 0) facts.scope = scope
  return facts
}

/** Roles (put, delete), org records, rate limits, registry files: admin only. */
export function requireAdmin (s: AdminScope, what: string): void {
  if (s.scope !== 'admin') {
    throw new AdminError(
    `${what} needs ${ADMIN_PERMISSION}`,
    'forbidden',
    ADMIN_PERMISSION,
    undefined,
    'denied'
    )
  }
}

/** Users, imports, leak reports and the audit trail: an org admin for its own org. */
export function requireOrgAdmin (s: AdminScope, what: string): void {
  if (s.scope === 'self') {
    throw new AdminError(
    `${what} needs ${ORG_ADMIN_PERMISSION}`,
    'forbidden',
    ORG_ADMIN_PERMISSION,
    undefined,
    'denied'
    )
  }
}

/**
 * The org a listing is limited to: the caller's own for org and self principals; `null`: an org it may not see (empty
 * list).
 */
export function orgFilter (s: AdminScope, org: string | undefined): string | undefined | null {
  if (s.scope === 'admin') return org
  if (org !== undefined && org !== s.org) return null
  return s.org
}

/** The user filter of a key listing: a self principal sees its own user's keys only; `null`: an empty list. */
export function keyUserFilter (s: AdminScope, user: string | undefined): string | undefined | null {
  if (s.scope !== 'self') return user
  if (user !== undefined && user !== s.user) return null
  return s.user
}

/** The roles the caller may give: all for an admin, those within its grants otherwise. */
export function givableRoles<R extends { permissions: readonly string[] }> (s: AdminScope, roles: R[]): R[] {
  if (s.scope === 'admin') return roles
  return roles.filter((r) => s.grants.hasAll(r.permissions))
}

/** Whether the caller may read a key with these owner fields (visibleKey's rule, for keys read in bulk). */
export function seesKey (
  s: AdminScope,
  key: OwnedKey & { org: string }
): boolean {
  if (s.scope === 'org') return key.org === s.org
  if (s.scope === 'self') return ownsKey(s.user, key)
  return true
}

/** The user, if the caller may see it (org: its org; self: its own user); otherwise 404 as if missing. */
export function visibleUser (s: AdminScope, id: string, user: UserView | undefined): UserView {
  if (user === undefined) throw new AdminError(`user "${id}" does not exist`, 'not_found')
  if (s.scope === 'org' && user.org !== s.org) throw new AdminError(`user "${id}" is not in org ${s.org}`, 'not_found')
  if (s.scope === 'self' && id !== s.user) {
    throw new AdminError(
    `user "${id}" is not the caller's own user`,
    'not_found'
    )
  }
  return user
}

/** The key, if the caller may see it (org: in its org; self: its user's); otherwise 404 as if missing. */
export function visibleKey<K extends KeyFacts> (s: AdminScope, id: string, key: K | undefined): K {
  if (key === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
  if (s.scope === 'org' && key.org !== s.org) throw new AdminError(`key "${id}" is not in org ${s.org}`, 'not_found')
  if (s.scope === 'self' && !ownsKey(s.user, key)) {
    throw new AdminError(
    `key "${id}" is not a key of user ${s.user}`,
    'not_found'
    )
  }
  return key
}

/**
 * A user the caller may change (deactivate, activate, put, give keys to): visible, and its role within the caller's
 * grants.
 */
export function manageableUser (s: AdminScope, snap: Snapshot, id: string, action: string): UserView {
  requireOrgAdmin(s, action)
  const fields = snap.users.get(id)
  const user = denyingReads(s, () => visibleUser(s, id, fields === undefined ? undefined : userViewOf(id, fields)))
  withinGrants(s, snap, user.role, `user "${id}" has role "${user.role ?? ''}", beyond the caller's own permissions`)
  return user
}

/**
 * A key the caller may revoke by id, rotate or restrict: visible, and (org admin)
 * acting with a role within its grants. A self principal rotates its own user's
 * personal keys only; an org admin never rotates another user's personal key. A
 * rotation by an org or self principal hands out the key's authority again, so what
 * the key may do (its role narrowed by its scope) must be within the caller's grants.
 */
export function manageableKey (
  s: AdminScope,
  snap: Snapshot,
  id: string,
  action: 'key.revoke' | 'key.rotate' | 'key.restrict'
): KeyFacts {
  const key = denyingReads(s, () => visibleKey(s, id, keyFactsOf(id, snap.keys.get(id))))
  if (s.scope === 'self' && action === 'key.rotate' && key.type !== 'personal') {
    throw denied(s, 'forbidden', `rotating a BOT key needs ${ORG_ADMIN_PERMISSION}`, ORG_ADMIN_PERMISSION)
  }
  if (s.scope === 'org' && action === 'key.rotate' && key.type === 'personal' && key.user !== s.user) {
    throw denied(s, 'forbidden', PERSONAL_KEY_REFUSAL, ADMIN_PERMISSION, [{ reason: PERSONAL_KEY_REFUSAL }])
  }
  if (s.scope === 'org' || (s.scope === 'self' && action === 'key.rotate')) {
    const role = actingRole(snap, key)
    withinGrants(
      s,
      snap,
      role,
      `key "${id}" acts with role "${role ?? ''}", beyond the caller's own permissions`,
      key.scope
    )
  }
  return key
}

/**
 * A scope the caller may give a key: every permission of it within the caller's own
 * grants (an admin: any). Removing a key's scope (`null`) gives it its whole role: then
 * that role must be within the caller's grants.
 */
export function checkScope (
  s: AdminScope,
  snap: Snapshot,
  scope: readonly string[] | undefined | null,
  key?: KeyFacts
): void {
  if (s.scope === 'admin' || scope === undefined) return
  if (scope === null) {
    if (key === undefined) return
    const role = actingRole(snap, key)
    withinGrants(
      s,
      snap,
      role,
      `without a scope, key "${key.id}" would act with role "${role ?? ''}", beyond the caller's own permissions`
    )
    return
  }
  const beyond = scope.filter((p) => !s.grants.has(p))
  if (beyond.length === 0) return
  const why = `a key's scope is within the caller's own permissions; beyond them: ${beyond.join(' ')}`
  throw denied(s, 'forbidden', why, undefined, [{ field: 'scope', reason: why }])
}

/**
 * Refuses unless every permission of the role (narrowed by `keyScope`, a key's scope,
 * by the one intersection: scopedGrants) is within the caller's grants; a missing
 * role is refused alike.
 */
export function withinGrants (
  s: AdminScope,
  snap: Snapshot,
  role: string | undefined,
  why: string,
  keyScope?: readonly string[]
): void {
  if (s.scope === 'admin') return
  if (!roleWithinGrants(s.grants, snap, role, keyScope)) throw denied(s, 'forbidden', why)
}

/** Whether the role (narrowed by a key's scope) is within `grants`; a role not in the snapshot is not. */
export function roleWithinGrants (
  grants: Grants,
  snap: Snapshot,
  role: string | undefined,
  keyScope?: readonly string[]
): boolean {
  const found = role === undefined ? undefined : snap.roles.get(role)
  if (found === undefined) return false
  const permissions = (found.permissions ?? '').split(/\s+/).filter((p) => p !== '')
  const effective = scopedGrants(new Grants(permissions), keyScope === undefined ? undefined : new Grants(keyScope))
  return grants.hasAll(effective.permissions)
}

/** The role a key acts with: a personal key its user's (as the snapshot has it), a BOT key its own. */
export function actingRole (snap: Snapshot, key: Pick<KeyFacts, 'type' | 'user' | 'role'>): string | undefined {
  return key.type === 'personal' ? snap.users.get(key.user ?? '')?.role : key.role
}
