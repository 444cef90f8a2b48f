/**
 * A key creation, decided over a snapshot of the records it names (the user, the role,
 * the creator, the org), in the order a request meets the checks:
 *
 *   1. who may      the caller's scope (keyToCreate): an admin any key; an org admin BOT
 *                   keys of its org with a role within its grants, and its own personal
 *                   keys; a self principal its own personal keys. Defaults filled in.
 *   2. references   the user exists and is active, the role exists, the creator exists;
 *                   every problem at once (keyReferences). An org with no record warns.
 *   3. the record   its shape (name, creator, rate limit, scope, addresses), its owner
 *                   resolved to its org, the org's key policy (keyRecord).
 */
import { INVALID, isoTimestamp, parseUserRecord } from '../../registry/records.js'
import { ownerOf, userActor } from '../model/actors.js'
import { AdminError, type ErrorDetail } from '../model/errors.js'
import { ADMIN_PERMISSION, ORG_ADMIN_PERMISSION, SELF_PERMISSION, type AdminScope } from '../model/principal.js'
import type { Snapshot } from '../model/snapshot.js'
import { userViewOf, type CreatedKey } from '../model/views.js'
import { defaultExpiry, formatTtl, keyCapOf, overCap } from './key-expiry.js'
import {
  checkKeyExclusions,
  checkKeyLabels,
  checkKeyRequirements,
  checkKeyRestriction,
  type KeyOwnerFields,
  type KeyRestrictionInput
} from './key-input.js'
import { checkName, checkRateLimit, NAME, nameProblems } from './names.js'
import { denied, denyingReads, refuseAny, type Problem } from './refusals.js'
import { checkScope, PERSONAL_KEY_REFUSAL, roleWithinGrants, visibleUser, withinGrants } from './scope-rules.js'

/** What a key creation asks for, before the policy fills in defaults. */
export interface KeyRequest extends KeyOwnerFields, KeyRestrictionInput {
  name?: string | undefined
  expiresInMs?: number | undefined
  /** a user id: the key is recorded as created by that user (admin only) */
  createdBy?: string | undefined
  /** the key's own rate limit (admin only: a key's own limit replaces the default) */
  rateLimit?: string | undefined
}

/** A key to write: a request as the scope rules let it through, defaults filled in. */
export interface CreateKeyInput extends KeyOwnerFields, KeyRestrictionInput {
  name?: string | undefined
  expiresInMs?: number | undefined
  /** a typed actor (model/actors.ts); default: the acting principal's actor */
  createdBy?: string | undefined
  /** the key's own `rate_limit`, `<count>/<period>` */
  rateLimit?: string | undefined
  /**
   * the longest the creator may make it live (self service); no expiry asked means this, or the org's cap if shorter
   */
  expiresWithinMs?: number | undefined
}

export interface KeyCreation {
  input: CreateKeyInput
  /** the key's org: its user's, or the one asked for a BOT key */
  org: string
  /** the record to write, but its hash */
  record: Record<string, string>
  warnings: ErrorDetail[]
}

/** The target a key creation is audited under: the user of a personal key, the role of a BOT key. */
export function keyCreationTarget (s: AdminScope, r: KeyOwnerFields): string {
  return r.type === 'personal' ? `user:${r.user ?? s.user ?? ''}` : `role:${r.role ?? ''}`
}

/** The whole decision: who may, references, the record. `actor`: the creator recorded when none is given. */
export function decideKeyCreation (
  s: AdminScope,
  snap: Snapshot,
  r: KeyRequest,
  o: { selfServiceMaxTtlMs: number, actor: string, now: number }
): KeyCreation {
  const input = keyToCreate(s, snap, r, o.selfServiceMaxTtlMs)
  const warnings = keyReferences(snap, input)
  return { input, warnings, ...keyRecord(snap, input, o) }
}

/** What a key creation may create: the request checked for shape and for scope, with its defaults filled in. */
export function keyToCreate (
  s: AdminScope,
  snap: Snapshot,
  r: KeyRequest,
  selfServiceMaxTtlMs: number
): CreateKeyInput {
  checkKeyExclusions(r)
  if (s.scope === 'admin') {
    checkKeyRequirements(r)
    // (no creator given: the store records the actor)
    const createdBy = r.createdBy === undefined ? undefined : userActor(r.createdBy)
    return {
      ...ownerAndLabels(r),
      expiresInMs: r.expiresInMs,
      createdBy,
      rateLimit: r.rateLimit,
      scope: r.scope,
      allowedCidrs: r.allowedCidrs
    }
  }
  checkScope(s, snap, r.scope)
  if (r.rateLimit !== undefined) {
    throw denied(
      s,
      'forbidden',
      'only an admin sets a key\'s rate limit',
      ADMIN_PERMISSION
    )
  }
  if (r.createdBy !== undefined && r.createdBy !== s.user) {
    throw denied(s, 'forbidden', 'only an admin records another user as a key\'s creator', ADMIN_PERMISSION)
  }
  // a personal key acts as its user: what it creates is that user's
  const createdBy = s.user === undefined ? undefined : userActor(s.user)
  if (r.type === 'personal') {
    checkKeyRequirements({ type: 'personal', user: r.user ?? s.user })
    const user = (r.user ?? s.user) as string
    if (s.scope === 'self' && user !== s.user) {
      throw denied(
        s,
        'forbidden',
        `${SELF_PERMISSION} creates personal keys for its own user (${s.user}) only`,
        ORG_ADMIN_PERMISSION
      )
    }
    if (s.scope === 'org' && user !== s.user) {
      // (a user outside the org answers exactly as a missing one, here too)
      const fields = snap.users.get(user)
      denyingReads(
        s,
        () => missingAs(
          'user',
          `user "${user}" does not exist`,
          () => visibleUser(s, user, fields === undefined ? undefined : userViewOf(user, fields))
        )
      )
      throw denied(
        s,
        'forbidden',
        PERSONAL_KEY_REFUSAL,
        ADMIN_PERMISSION,
        [{ field: 'user', reason: PERSONAL_KEY_REFUSAL }]
      )
    }
    // a key made by a principal narrower than its user's role (a scoped key) is no wider than that principal
    const scope = r.scope ?? (roleWithinGrants(
      s.grants,
      snap,
      snap.users.get(user)?.role
    )
      ? undefined
      : [...s.grants.permissions])
    return {
      type: 'personal',
      user,
      name: r.name,
      expiresInMs: r.expiresInMs,
      createdBy,
      scope,
      allowedCidrs: r.allowedCidrs
    }
  }
  const org = r.org ?? s.org
  checkKeyRequirements({ type: 'bot', role: r.role, org })
  if (org !== s.org) throw denied(s, 'forbidden', `BOT keys are created in the caller's own org (${s.org}) only`)
  // a role the caller may not see (missing, or broader than its grants) is refused alike
  const role = r.role as string
  withinGrants(
    s,
    snap,
    role,
    `role "${role}" is not within the caller's own permissions (no escalation through a BOT key)`
  )
  if (r.expiresInMs !== undefined && r.expiresInMs > selfServiceMaxTtlMs) {
    const why = `a BOT key created without ${ADMIN_PERMISSION} expires within ${formatTtl(selfServiceMaxTtlMs)} at most`
    throw new AdminError(why, 'invalid', undefined, [{ field: 'expires_in', reason: why }])
  }
  return {
    type: 'bot',
    role,
    org,
    name: r.name,
    expiresInMs: r.expiresInMs,
    expiresWithinMs: selfServiceMaxTtlMs,
    createdBy,
    scope: r.scope,
    allowedCidrs: r.allowedCidrs
  }
}

function ownerAndLabels (r: KeyRequest): Pick<CreateKeyInput, 'type' | 'user' | 'role' | 'org' | 'name'> {
  return { type: r.type, user: r.user, role: r.role, org: r.org, name: r.name }
}

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

/**
 * The record of a new key (all but its hash): its shape checked, its owner resolved to
 * its org (an active user with a complete record, or an existing role), and its expiry
 * within the org's key policy and the creator's cap.
 */
export function keyRecord (
  snap: Snapshot,
  input: CreateKeyInput,
  o: { actor: string, now: number }
): { org: string, record: Record<string, string> } {
  checkKeyExclusions(input)
  checkKeyRequirements(input)
  checkKeyLabels(input)
  if (input.rateLimit !== undefined) checkRateLimit(input.rateLimit)
  checkKeyRestriction(input)
  const org = resolveOwner(snap, input)
  const cap = keyCapOf(org, snap.orgs.get(org))
  if (cap !== undefined && input.expiresInMs !== undefined && input.expiresInMs > cap) {
    throw overCap(
      org,
      cap,
      'expires_in'
    )
  }
  const expiresInMs = input.expiresInMs ?? defaultExpiry(cap, input.expiresWithinMs)
  return { org, record: newKeyRecord({ ...input, expiresInMs }, org, o) }
}

/** A new key's record (all but its hash), as given: its creator the acting principal's actor unless named. */
export function newKeyRecord (
  input: CreateKeyInput,
  org: string,
  o: { actor: string, now: number }
): Record<string, string> {
  const record: Record<string, string> = {
    type: input.type,
    org,
    name: input.name ?? '',
    status: 'active',
    created_at: isoTimestamp(o.now),
    created_by: input.createdBy ?? o.actor
  }
  if (input.type === 'personal') record.user = input.user as string
  else record.role = input.role as string
  if (input.expiresInMs !== undefined) record.expires_at = isoTimestamp(o.now + input.expiresInMs)
  if (input.rateLimit !== undefined) record.rate_limit = input.rateLimit
  if (input.scope !== undefined) record.scope = input.scope.join(' ')
  if (input.allowedCidrs !== undefined) record.allowed_cidrs = input.allowedCidrs.join(' ')
  return record
}

/** What the creator is shown of a new key: its id, the key itself (this once), and its record's public fields. */
export function createdKeyOf (
  id: string,
  key: string,
  record: Record<string,
  string>,
  input: KeyRestrictionInput
): CreatedKey {
  const created: CreatedKey = {
    id,
    key,
    type: record.type as string,
    org: record.org as string,
    name: record.name as string,
    created_at: record.created_at as string
  }
  if (record.user !== undefined) created.user = record.user
  if (record.role !== undefined) created.role = record.role
  if (record.expires_at !== undefined) created.expires_at = record.expires_at
  if (record.rate_limit !== undefined) created.rate_limit = record.rate_limit
  if (input.scope !== undefined) created.scope = [...input.scope]
  if (input.allowedCidrs !== undefined) created.allowed_cidrs = [...input.allowedCidrs]
  return created
}

/** The new key's org, once its owner is found: an active user with a complete record, or an existing role. */
export function resolveOwner (snap: Snapshot, input: KeyOwnerFields): string {
  checkKeyRequirements(input)
  if (input.type === 'personal') {
    const id = input.user as string
    const fields = snap.users.get(id)
    if (fields === undefined) throw new AdminError(`user "${id}" does not exist`, 'not_found')
    const user = parseUserRecord(fields)
    if (user === INVALID) throw new AdminError(`user "${id}" has an incomplete record`, 'conflict')
    if (user.status !== 'active') throw new AdminError(`user "${id}" is deactivated`, 'conflict')
    return user.org
  }
  checkName('org', input.org as string)
  if (!snap.roles.has(input.role as string)) {
    throw new AdminError(
    `role "${input.role as string}" does not exist`,
    'not_found'
    )
  }
  return input.org as string
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

/** A record missing, or outside the caller's scope, refused with one detail that says only that it does not exist. */
function missingAs<T> (field: string, reason: string, fn: () => T): T {
  try {
    return fn()
  } catch (err: unknown) {
    if (err instanceof AdminError && err.kind === 'not_found') {
      throw new AdminError(
        err.message,
        'not_found',
        undefined,
        [{ field, reason }],
        err.audit
      )
    }
    throw err
  }
}
