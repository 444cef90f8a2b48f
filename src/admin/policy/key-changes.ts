/**
 * Changes to an existing key, each decided over a snapshot of the key (and, for a
 * caller narrower than an admin, of the role it acts with): revoke, rotate, restrict,
 * and its own rate limit. A caller narrower than an admin may touch only a key it
 * manages (scope-rules.ts manageableKey); the registry's state decides the rest.
 */
import { parseRateLimit } from '../../config/rate-limit.js'
import { CREDITS, parseQuota } from '../../config/quota.js'
import { INVALID, isoTimestamp, parseMeta, parseTimestamp } from '../../registry/records.js'
import { ownerOf, readCreatedBy } from '../model/actors.js'
import { AdminError } from '../model/errors.js'
import type { AdminScope } from '../model/principal.js'
import type { Snapshot } from '../model/snapshot.js'
import { keyCapOf } from './key-expiry.js'
import type { CreateKeyInput } from './key-input.js'
import { newKeyRecord, resolveOwner } from './key-records.js'
import { checkKeyRestriction } from './key-input.js'
import { checkRateLimit } from './names.js'
import { checkScope, manageableKey, requireAdmin } from './scope-rules.js'
import { restrictionWithinCallerKey, rotationWithinCallerKey } from './caller-key.js'

/** A change decided: `changed` false when the record is already as asked (nothing is written). */
export type KeyChange<T> = { changed: false } | ({ changed: true, org: string | undefined } & T)

/** Revoking: a key that does not exist is 404; a revoked one stays as it is. */
export function decideRevoke (s: AdminScope, snap: Snapshot, id: string): KeyChange<{ from: string }> {
  if (s.scope !== 'admin') manageableKey(s, snap, id, 'key.revoke')
  const key = snap.keys.get(id)
  if (key?.status === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
  return key.status === 'revoked' ? { changed: false } : { changed: true, org: key.org, from: key.status }
}

/** A key's scope and addresses: a list sets one, `null` removes it, undefined keeps it. */
export interface KeyRestrictionChange {
  scope?: readonly string[] | null | undefined
  allowedCidrs?: readonly string[] | null | undefined
}

/**
 * Restricting: an admin any key; an org admin its org's keys acting within its grants;
 * a self principal its own user's keys; a scope within the caller's own grants, and
 * nothing wider than the caller's own key allows (caller-key.ts). `next`:
 * each field's value, null to remove it.
 */
export function decideRestriction (s: AdminScope, snap: Snapshot, id: string, change: KeyRestrictionChange): KeyChange<{
  next: Record<'scope' | 'allowed_cidrs',
  string | null>,
  detail: Record<string,
  string>
}> {
  if (s.scope !== 'admin') checkScope(s, snap, change.scope, manageableKey(s, snap, id, 'key.restrict'))
  checkKeyRestriction({ scope: change.scope ?? undefined, allowedCidrs: change.allowedCidrs ?? undefined })
  restrictionWithinCallerKey(s, id, change)
  const key = snap.keys.get(id)
  if (key?.type === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
  const scope = key.scope ?? null
  const cidrs = key.allowed_cidrs ?? null
  const next = {
    scope: change.scope === undefined ? scope : change.scope === null ? null : change.scope.join(' '),
    allowed_cidrs: change.allowedCidrs === undefined
      ? cidrs
      : change.allowedCidrs === null ? null : change.allowedCidrs.join(' ')
  }
  if (next.scope === scope && next.allowed_cidrs === cidrs) return { changed: false }
  const detail = {
    scope: next.scope ?? '',
    allowed_cidrs: next.allowed_cidrs ?? '',
    from_scope: scope ?? '',
    from_allowed_cidrs: cidrs ?? ''
  }
  return { changed: true, org: key.org, next, detail }
}

/** A key's own rate limit (admin only); `null` removes it (its role's, org's and the default limits still apply). */
export function decideKeyLimit (
  s: AdminScope,
  snap: Snapshot,
  id: string,
  limit: string | null
): KeyChange<{ detail: Record<string, string> }> {
  requireAdmin(s, 'a key\'s own rate limit')
  if (limit !== null) checkRateLimit(limit)
  const key = snap.keys.get(id)
  if (key?.type === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
  const current = key.rate_limit ?? null
  if (current === limit) return { changed: false }
  return { changed: true, org: key.org, detail: { rate_limit: limit ?? '', from: current ?? '' } }
}

export interface Rotation {
  /** the org of both keys */
  org: string
  /** the new key's record (all but its hash) and what the creator is shown of it */
  input: CreateKeyInput
  record: Record<string, string>
  /** when the old key stops working */
  replacesExpiresAt: string
}

/**
 * Rotating: a new key with the same type, owner, role, org, name, creator (and root
 * owner), rate limit, quota and credits (continuing the old key's count, docs/quotas.md),
 * scope and addresses; the old one keeps working until now + grace (or its own earlier
 * expiry). Only an active key is rotated. A personal key whose user has left the key's org
 * is not (409): the new key keeps the key's org, never the user's current one. The new
 * key's expiry is the old one's, within the org's key policy and (for a caller narrower
 * than an admin) the self-service cap of a BOT key. A caller signed in with a key rotates
 * only keys within that key's addresses, and the new key expires with it.
 */
export function decideRotation (
  s: AdminScope,
  snap: Snapshot,
  id: string,
  graceMs: number,
  o: { selfServiceMaxTtlMs: number, actor: string, now: number }
): Rotation {
  if (s.scope !== 'admin') manageableKey(s, snap, id, 'key.rotate')
  const botMaxTtlMs = s.scope === 'admin' ? undefined : o.selfServiceMaxTtlMs
  const old = snap.keys.get(id) ?? {}
  if (old.type === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
  if (old.status !== 'active') {
    throw new AdminError(
    `key "${id}" is ${old.status ?? 'in an unknown state'}; only an active key can be rotated`,
    'conflict'
    )
  }
  const oldExpiry = old.expires_at === undefined ? undefined : parseTimestamp(old.expires_at)
  if (oldExpiry !== undefined && oldExpiry <= o.now) {
    throw new AdminError(
    `key "${id}" has expired; create a new key instead`,
    'conflict'
    )
  }
  if (old.type !== 'personal' && old.type !== 'bot') {
    throw new AdminError(
    `key "${id}" has an unknown type "${old.type}"`,
    'conflict'
    )
  }
  if (old.org === undefined) throw new AdminError(`key "${id}" has no org`, 'conflict')
  // the new key is the old one's: its type, org, owner (the user, or the role), name, creator and rate limit
  const owner = old.type === 'personal' ? { user: old.user } : { role: old.role, org: old.org }
  const input: CreateKeyInput = { type: old.type, ...owner, name: old.name, createdBy: readCreatedBy(old.created_by) }
  if (ownerOf(old.owner) !== undefined) input.owner = old.owner
  // a test key's replacement is a test key
  if (old.env === 'test') input.env = 'test'
  // (a malformed limit is not carried over: the new key gets the default until an admin sets one)
  if (old.rate_limit !== undefined && parseRateLimit(old.rate_limit) !== undefined) input.rateLimit = old.rate_limit
  // its allowance, and what is spent of it: the new key continues the old one's meter
  if (old.quota !== undefined && parseQuota(old.quota) !== undefined) input.quota = old.quota
  if (old.credits !== undefined && CREDITS.test(old.credits)) input.credits = Number(old.credits)
  if (input.quota !== undefined || input.credits !== undefined) input.meter = old.meter ?? id
  // its identity and meta (docs/identities.md): the new key shares the identity's limits and allowance
  if (old.type === 'bot' && old.identity !== undefined && old.identity !== '') input.identity = old.identity
  const meta = parseMeta(old.meta)
  if (meta !== undefined && meta !== INVALID) input.meta = { ...meta.value }
  // its scope and addresses, as they are: a replacement is never wider than the key it replaces
  if (old.scope !== undefined && old.scope !== '') input.scope = old.scope.split(/\s+/).filter((p) => p !== '')
  if (old.allowed_cidrs !== undefined && old.allowed_cidrs !== '') {
    input.allowedCidrs = old.allowed_cidrs.split(/\s+/).filter((c) => c !== '')
  }
  // a personal key acts as its user in the key's org; once the user has left that org the
  // key is dead, and a replacement would act in the user's new org for whoever holds it
  if (resolveOwner(snap, input) !== old.org) {
    const why = 'the user is no longer in the key\'s org'
    throw new AdminError(
      `key "${id}": ${why} (${old.org}); create a new key for the user instead`,
      'conflict',
      undefined,
      [{ field: 'user', reason: why }]
    )
  }
  const org = old.org
  // the new key keeps the old one's expiry, if it had one
  if (oldExpiry !== undefined) input.expiresInMs = oldExpiry - o.now
  if (botMaxTtlMs !== undefined && old.type === 'bot') {
    input.expiresInMs = Math.min(
      input.expiresInMs ?? botMaxTtlMs,
      botMaxTtlMs
    )
  }
  // the org's key policy as it is now: the new key expires within it
  const cap = keyCapOf(org, snap.orgs.get(org))
  if (cap !== undefined) input.expiresInMs = Math.min(input.expiresInMs ?? cap, cap)
  // and no wider than the key the caller signed in with, whose holder gets the new secret
  const bounded = rotationWithinCallerKey(s, input, o.now)
  const record = { ...newKeyRecord(bounded, org, o), replaces: id }
  const replacesExpiresAt = isoTimestamp(Math.min(o.now + graceMs, oldExpiry ?? Number.POSITIVE_INFINITY))
  return { org, input: bounded, record, replacesExpiresAt }
}
