/**
 * Users, decided over a snapshot of the user (and the roles concerned): put (create or
 * update) and status (deactivate, activate). An admin manages every user; an org admin
 * its own org's users, with roles within its grants; a user of another org is 404 to it.
 */
import { AdminError, type ErrorDetail } from '../model/errors.js'
import { callerUser, type AdminScope } from '../model/principal.js'
import type { Snapshot } from '../model/snapshot.js'
import type { KeyView } from '../model/views.js'
import { orgWarnings, roleProblems } from './references.js'
import { userShape } from './names.js'
import { denied, refuseAny } from './refusals.js'
import { manageableUser, requireOrgAdmin, withinGrants } from './scope-rules.js'

export interface UserInput {
  /** undefined: an existing user keeps its org (a new user needs one) */
  org?: string | undefined
  role: string
  name?: string | undefined
  email?: string | undefined
}

export interface UserPut {
  /** the fields to write */
  fields: Record<string, string>
  /** the org the user leaves (its org index), when it moves */
  fromOrg: string | undefined
  /** the email (lower case) the user gives up, whose index entry goes */
  fromEmail?: string | undefined
  created: boolean
  warnings: ErrorDetail[]
}

/**
 * A user put: an org admin puts users of its own org only, with a role within its
 * grants, and changes an existing user only while it manages it. The id, the org and
 * the role are names, the role exists; a new user is active, an existing one keeps its
 * status. `createOnly`: a new user only (an existing id is a conflict).
 */
export function decidePutUser (
  s: AdminScope,
  snap: Snapshot,
  id: string,
  input: UserInput,
  o: { createOnly?: boolean | undefined } = {}
): UserPut {
  requireOrgAdmin(s, 'putting a user')
  const existing = snap.users.get(id)
  // an org admin's user is in its own org unless it names another (refused below); an
  // admin's existing user keeps its org
  const org = input.org ?? (s.scope === 'org' ? s.org : existing?.org)
  if (org === undefined) {
    throw new AdminError(`user "${id}" does not exist: a new user needs an org`, 'invalid', undefined, [
      { field: 'org', reason: `user "${id}" does not exist: a new user needs an org` }
    ])
  }
  if (s.scope === 'org') {
    // the org asked for first: a user of another org is answered exactly as a missing one
    if (org !== s.org) throw denied(s, 'forbidden', `an org admin puts users in its own org (${s.org}) only`)
    if (snap.users.has(id)) manageableUser(s, snap, id, 'user.put')
    withinGrants(s, snap, input.role, `role "${input.role}" is not within the caller's own permissions`)
  }
  refuseAny([...userShape(id, org), ...roleProblems(snap, 'role', input.role)])
  const warnings = orgWarnings(snap, org)
  if (o.createOnly === true && existing !== undefined) throw new AdminError(`user "${id}" exists`, 'conflict')
  const fields: Record<string, string> = { org, role: input.role }
  if (existing?.status === undefined) fields.status = 'active'
  if (input.name !== undefined) fields.name = input.name
  if (input.email !== undefined) fields.email = input.email
  const fromEmail = checkEmail(s, snap, id, input.email)
  const fromOrg = existing?.org !== undefined && existing.org !== org ? existing.org : undefined
  return { fields, fromOrg, fromEmail, created: existing?.status === undefined, warnings }
}

/**
 * A user's email is how SSO's `match: email` signs a person in as that user (docs/sso.md),
 * so it is one user's only, and only `keygate:admin` sets another user's: an org admin
 * writing its own IdP email into a colleague's record would sign in as the colleague.
 * Another user's email (in any case) is refused (409) while that user's record holds it
 * (`snap.emails`: the index, its holder's record read too). Returns the email the user
 * gives up (lower case), if any.
 */
function checkEmail (s: AdminScope, snap: Snapshot, id: string, email: string | undefined): string | undefined {
  if (email === undefined) return undefined
  const before = snap.users.get(id)?.email
  const wanted = email.toLowerCase()
  if (before?.toLowerCase() === wanted) return undefined
  if (s.scope !== 'admin' && id !== s.user) {
    throw denied(s, 'forbidden', 'only keygate:admin sets another user\'s email (it signs a person in)', undefined,
      [{ field: 'email', reason: 'only keygate:admin sets another user\'s email' }])
  }
  const holder = snap.emails.get(wanted)
  if (
    wanted !== '' &&
    holder !== undefined &&
    holder !== id &&
    snap.users.get(holder)?.email?.toLowerCase() === wanted
  ) {
    const why = 'the email is another user\'s (a sign-in email belongs to one user)'
    throw new AdminError(why, 'conflict', undefined, [{ field: 'email', reason: why }])
  }
  return before === undefined || before === '' ? undefined : before.toLowerCase()
}

export interface UserStatusChange {
  changed: boolean
  /** the user's BOT keys (created by them) that are active, after the change */
  createdKeys: string[]
  /** the ones this change revoked */
  revokedKeys: string[]
}

/**
 * Deactivating stops every personal key of the user at once (the key records are
 * untouched) and ends the user's SSO sessions. Nobody deactivates their own user: it
 * would end the very sign-in that asks, and could leave a registry with no admin. The BOT keys the user created
 * (`listed`: those the caller may see) are independent of the user: they are reported,
 * and revoked in the same change only when `revokeCreatedKeys` asks.
 */
export function decideUserStatus (
  s: AdminScope,
  snap: Snapshot,
  id: string,
  status: 'active' | 'deactivated',
  o: { revokeCreatedKeys?: boolean | undefined },
  listed: readonly KeyView[]
): UserStatusChange & { org: string | undefined, detail: Record<string, string> } {
  if (s.scope !== 'admin') manageableUser(s, snap, id, status === 'active' ? 'user.activate' : 'user.deactivate')
  if (status === 'deactivated' && id === callerUser(s)) {
    const why = 'a user cannot deactivate themself: another admin does it'
    throw new AdminError(why, 'conflict', undefined, [{ field: 'id', reason: why }])
  }
  const user = snap.users.get(id)
  const current = user?.status
  if (current === undefined) throw new AdminError(`user "${id}" does not exist`, 'not_found')
  const created = listed.filter((k) => k.type === 'bot' && k.status === 'active').map((k) => k.id)
  const revokedKeys = status === 'deactivated' && o.revokeCreatedKeys === true ? created : []
  const detail: Record<string, string> = { from: current, to: status }
  if (revokedKeys.length > 0) detail.revoked_keys = revokedKeys.join(' ')
  return {
    changed: current !== status,
    createdKeys: created.filter((k) => !revokedKeys.includes(k)),
    revokedKeys,
    org: user?.org,
    detail
  }
}
