/**
 * What a write may refer to, checked against a snapshot of the registry: a user that
 * exists (and is active, for a personal key), a role that exists, a creator that exists,
 * an org that is a name (it needs no record: naming one without warns). Every problem of
 * one write at once, each a detail safe to show: the scope rules have already answered
 * for anything outside the caller's scope.
 */
import { ownerOf } from '../model/actors.js'
import type { ErrorDetail } from '../model/errors.js'
import type { Snapshot } from '../model/snapshot.js'
import type { CreateKeyInput } from './key-input.js'
import { NAME, nameProblems } from './names.js'
import { refuseAny, type Problem } from './refusals.js'

/**
 * A new key's references, every problem at once: its user exists and is active (a
 * personal key), its role exists (a BOT key), its org is a name, its creator exists.
 * Returns the warnings: a BOT key's org with no record.
 */
export function keyReferences (snap: Snapshot, input: CreateKeyInput): ErrorDetail[] {
  const creator = ownerOf(input.createdBy)
  refuseAny([
    ...input.type === 'personal'
      ? userProblems(
        snap,
        'user',
        input.user,
        true
      )
      : roleProblems(snap, 'role', input.role),
    ...input.org === undefined ? [] : nameProblems('org', 'org', input.org),
    // (a key made by a signed-in user records that user, who exists)
    ...creator === undefined ? [] : userProblems(snap, 'created_by', creator, false)
  ])
  return input.type === 'bot' && input.org !== undefined ? orgWarnings(snap, input.org) : []
}

/** A user named by a write: a name, existing, and (`mustBeActive`) not deactivated. */
export function userProblems (
  snap: Snapshot,
  field: string,
  user: string | undefined,
  mustBeActive: boolean
): Problem[] {
  if (user === undefined) return []
  const shape = nameProblems(field, 'user id', user)
  if (shape.length > 0) return shape
  const found = snap.users.get(user)
  if (found === undefined) return [{ field, reason: `user "${user}" does not exist`, kind: 'not_found' }]
  if (mustBeActive && found.status === 'deactivated') {
    return [{
      field,
      reason: `user "${user}" is deactivated`,
      kind: 'conflict'
    }]
  }
  return []
}

/** A role named by a write: a name, existing. */
export function roleProblems (snap: Snapshot, field: string, role: string | undefined): Problem[] {
  if (role === undefined) return []
  const shape = nameProblems(field, 'role', role)
  if (shape.length > 0) return shape
  return snap.roles.has(role) ? [] : [{ field, reason: `role "${role}" does not exist`, kind: 'not_found' }]
}

/**
 * An org needs no record (users and keys may name any org; the record adds a name and limits): naming one without
 * warns.
 */
export function orgWarnings (snap: Snapshot, org: string): ErrorDetail[] {
  if (!NAME.test(org) || snap.orgs.has(org)) return []
  return [{ field: 'org', reason: `org "${org}" has no record: it has no name and no org rate limit until one is put` }]
}
