/**
 * What a registry write may refer to, checked for every front end (the CLI, the admin
 * API, the console) once the scope rules have allowed it and before the store writes:
 *
 *   names       a user's id, and every org, role and user named, are names (rules.ts);
 *               a user's id never starts with `bot:` (a BOT key's assertion `sub`)
 *   role        a user's or a BOT key's role exists
 *   user        a personal key's user exists and is active
 *   created_by  the user a key is recorded as created by exists
 *   permissions a role's permissions follow the one grammar (src/config/permission.ts)
 *   org         needs no record: users and keys may name any org, and the record only
 *               adds a name and a rate limit; naming one without a record is a warning
 *
 * Every problem of one write is reported at once, each a detail (field and reason) safe
 * to show: the scope rules have already answered for anything outside the caller's
 * scope, so a reason here only names what the caller sent or may see. The store keeps
 * its own guard against a reference that disappears in between.
 */
import { AdminError, ifMissing, NAME, nameProblem, type AdminErrorKind, type AdminStore, type CreateKeyInput, type ErrorDetail } from '../store/index.js'
import { ownerOf } from '../model/actors.js'
import { grantProblems } from '../../config/permission.js'

type Problem = ErrorDetail & { kind: Exclude<AdminErrorKind, 'forbidden'> }

/** A new key's references; returns the warnings. */
export async function checkKeyReferences (store: AdminStore, input: CreateKeyInput): Promise<ErrorDetail[]> {
  const creator = ownerOf(input.createdBy)
  const problems = [
    ...input.type === 'personal' ? await activeUser(store, 'user', input.user) : await existingRole(store, 'role', input.role),
    ...input.org === undefined ? [] : nameProblems('org', 'org', input.org),
    // (a key made by a signed-in user records that user, who exists)
    ...creator === undefined ? [] : await existingUser(store, 'created_by', creator)
  ]
  refuseAny(problems)
  return input.type === 'bot' && input.org !== undefined ? await orgWarnings(store, input.org) : []
}

/** A user's id and references; returns the warnings. */
export async function checkUserReferences (store: AdminStore, id: string, input: { org: string, role: string }): Promise<ErrorDetail[]> {
  refuseAny([...userShape(id, input.org), ...await existingRole(store, 'role', input.role)])
  return await orgWarnings(store, input.org)
}

/**
 * A user's id and org, in themselves (no registry read); its role's existence is the
 * caller's to check: against the registry (above), or against the registry as a
 * registry file would leave it (src/registry/as-code/).
 */
export function userShapeProblems (id: string, org: string): ErrorDetail[] {
  return userShape(id, org).map(({ field, reason }) => ({ field, reason }))
}

function userShape (id: string, org: string): Problem[] {
  return [...nameProblems('id', 'user id', id), ...botIdProblems(id), ...nameProblems('org', 'org', org)]
}

/** A role's name and permissions, every bad one named (no registry read). */
export function roleShapeProblems (name: string, permissions: readonly string[]): ErrorDetail[] {
  return [...nameProblems('name', 'role', name), ...grantProblems(permissions).map((reason) => ({ field: 'permissions', reason }))]
}

/**
 * A user id never starts with `bot:` (in any case): that is the signed assertion's
 * `sub` of a BOT key, so such a user's personal keys would be asserted as that BOT key.
 */
function botIdProblems (id: string): Problem[] {
  return id.toLowerCase().startsWith('bot:') ? [{ field: 'id', reason: `invalid user id "${id}": an id starting with "bot:" names a BOT key in signed assertions`, kind: 'invalid' }] : []
}

/** A role's permissions, every bad one named. */
export function checkRolePermissions (permissions: readonly string[]): void {
  refuseAny(grantProblems(permissions).map((reason) => ({ field: 'permissions', reason, kind: 'invalid' })))
}

/** Refuses with every problem: a malformed field first (400), then a missing record (404), then a state (409). */
function refuseAny (problems: Problem[]): void {
  if (problems.length === 0) return
  const kinds = new Set(problems.map((p) => p.kind))
  const kind = kinds.has('invalid') ? 'invalid' : kinds.has('not_found') ? 'not_found' : 'conflict'
  throw new AdminError(problems.map((p) => p.reason).join('; '), kind, undefined, problems.map(({ field, reason }) => field === undefined ? { reason } : { field, reason }))
}

function nameProblems (field: string, what: string, value: string): Problem[] {
  const reason = nameProblem(what, value)
  return reason === undefined ? [] : [{ field, reason, kind: 'invalid' }]
}

async function existingRole (store: AdminStore, field: string, role: string | undefined): Promise<Problem[]> {
  if (role === undefined) return []
  const shape = nameProblems(field, 'role', role)
  if (shape.length > 0) return shape
  const found = await store.showRole(role).catch(ifMissing(undefined))
  return found === undefined ? [{ field, reason: `role "${role}" does not exist`, kind: 'not_found' }] : []
}

async function existingUser (store: AdminStore, field: string, user: string | undefined): Promise<Problem[]> {
  return await userProblems(store, field, user, false)
}

async function activeUser (store: AdminStore, field: string, user: string | undefined): Promise<Problem[]> {
  return await userProblems(store, field, user, true)
}

async function userProblems (store: AdminStore, field: string, user: string | undefined, mustBeActive: boolean): Promise<Problem[]> {
  if (user === undefined) return []
  const shape = nameProblems(field, 'user id', user)
  if (shape.length > 0) return shape
  const found = await store.showUser(user).catch(ifMissing(undefined))
  if (found === undefined) return [{ field, reason: `user "${user}" does not exist`, kind: 'not_found' }]
  if (mustBeActive && found.status === 'deactivated') return [{ field, reason: `user "${user}" is deactivated`, kind: 'conflict' }]
  return []
}

async function orgWarnings (store: AdminStore, org: string): Promise<ErrorDetail[]> {
  if (!NAME.test(org) || await store.hasOrgRecord(org)) return []
  return [{ field: 'org', reason: `org "${org}" has no record: it has no name and no org rate limit until one is put` }]
}
