/**
 * A key creation, decided over a snapshot of the records it names (the user, the role,
 * the creator, the org), in the order a request meets the checks:
 *
 *   1. who may      the caller's scope (keyToCreate): an admin any key; an org admin BOT
 *                   keys of its org with a role within its grants, and its own personal
 *                   keys; a self principal its own personal keys. Defaults filled in.
 *   2. the caller's key  no wider than the key the caller signed in with: addresses
 *                   within its own, expiry no later; the person at the root of the
 *                   chain of creators recorded as its owner (caller-key.ts)
 *   3. references   the user exists and is active, the role exists, the creator exists;
 *                   every problem at once (references.ts). An org with no record warns.
 *   4. the record   its shape (name, creator, rate limit, scope, addresses), its owner
 *                   resolved to its org, the org's key policy (key-records.ts keyRecord).
 */
import { userActor } from '../model/actors.js'
import { AdminError, type ErrorDetail } from '../model/errors.js'
import { ADMIN_PERMISSION, ORG_ADMIN_PERMISSION, SELF_PERMISSION, type AdminScope } from '../model/principal.js'
import type { Snapshot } from '../model/snapshot.js'
import { userViewOf } from '../model/views.js'
import { formatTtl } from './key-expiry.js'
import {
  checkKeyExclusions, checkKeyRequirements, type CreateKeyInput, type KeyOwnerFields, type KeyRequest
} from './key-input.js'
import { keyRecord } from './key-records.js'
import { creationOwner, withinCallerKey } from './caller-key.js'
import { keyReferences } from './references.js'

import { denied, denyingReads } from './refusals.js'
import { checkScope, PERSONAL_KEY_REFUSAL, roleWithinGrants, visibleUser, withinGrants } from './scope-rules.js'

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
  const asked = withinCallerKey(s, { ...keyToCreate(s, snap, r, o.selfServiceMaxTtlMs), env: r.env }, o.now)
  // (a personal key's owner is its user)
  const owner = asked.type === 'bot' ? creationOwner(s, snap, asked.createdBy) : undefined
  const input = owner === undefined ? asked : { ...asked, owner }
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
      quota: r.quota,
      credits: r.credits,
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
  if (r.quota !== undefined || r.credits !== undefined) {
    throw denied(s, 'forbidden', 'only an admin sets a key\'s quota or credits', ADMIN_PERMISSION)
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
      allowedCidrs: r.allowedCidrs,
      identity: r.identity,
      meta: r.meta
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
    allowedCidrs: r.allowedCidrs,
    identity: r.identity,
    meta: r.meta
  }
}

function ownerAndLabels (
  r: KeyRequest
): Pick<CreateKeyInput, 'type' | 'user' | 'role' | 'org' | 'name' | 'identity' | 'meta'> {
  return { type: r.type, user: r.user, role: r.role, org: r.org, name: r.name, identity: r.identity, meta: r.meta }
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
