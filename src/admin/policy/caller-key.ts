/**
 * The key a principal signed in with bounds what it does (its scope, addresses and expiry; docs/key-scopes.md): a key's
 * addresses hold wherever it is used, so a principal never widens the restrictions of
 * its own key, and never mints a key wider than it (a key it creates, or the new key of
 * a rotation, whose secret it then holds):
 *
 *   addresses   a bound caller's keys are bound within its own addresses: none asked
 *               means its own; a wider one, or none at all on a rotated key, is refused
 *               (403). It sets no address beyond its own on any key, nor removes them.
 *   scope       its own key's scope is not removed (the scope rules keep every scope
 *               within the caller's grants, its key's scope included)
 *   expiry      a key it mints expires no later than its own: none asked means its
 *               own expiry; a later one is refused (400); a rotation is capped
 *
 *   owner       a key made by a key records the person at the root of the chain
 *               (`owner: user:<id>`) beside `created_by: key:<id>` (creationOwner)
 *
 * The admin token, the CLI, the hooks and an SSO session sign in with no key: nothing here applies.
 */
import { cidrProblems } from '../../registry/records.js'
import { AdminError } from '../model/errors.js'
import { ownerOf, rootUserOf, userActor } from '../model/actors.js'
import type { AdminScope, CallerKey } from '../model/principal.js'
import type { Snapshot } from '../model/snapshot.js'
import { denied } from './refusals.js'

/** What a new key's addresses and expiry may be, under the caller's key. */
export interface MintedBounds {
  allowedCidrs?: readonly string[] | undefined
  expiresInMs?: number | undefined
}

/** A key creation's addresses and expiry within the caller's key: its own when none are asked, refused when wider. */
export function withinCallerKey<T extends MintedBounds> (s: AdminScope, input: T, now: number): T {
  const key = s.key
  if (key === undefined) return input
  const out = { ...input }
  if (key.addresses !== undefined) {
    if (input.allowedCidrs === undefined) out.allowedCidrs = [...key.addresses.cidrs]
    else checkAddresses(s, key, input.allowedCidrs)
  }
  if (key.expiresAt !== undefined) {
    const left = Math.max(0, key.expiresAt - now)
    if (input.expiresInMs === undefined) out.expiresInMs = left
    else if (input.expiresInMs > left) throw laterThanCaller()
  }
  return out
}

/** A rotation's new key: bound within the caller's addresses (refused when not), expiring no later than its key. */
export function rotationWithinCallerKey<T extends MintedBounds> (s: AdminScope, input: T, now: number): T {
  const key = s.key
  if (key === undefined) return input
  if (key.addresses !== undefined) {
    if (input.allowedCidrs === undefined) {
      throw denied(s, 'forbidden', 'a key bound to addresses rotates only keys bound within them', undefined,
        [{ field: 'allowed_cidrs', reason: 'the key is bound to no addresses; the caller\'s key is' }])
    }
    checkAddresses(s, key, input.allowedCidrs)
  }
  if (key.expiresAt === undefined) return input
  const left = Math.max(0, key.expiresAt - now)
  return { ...input, expiresInMs: Math.min(input.expiresInMs ?? left, left) }
}

/**
 * A restriction change under the caller's key: a bound caller sets addresses only within
 * its own and removes none; no caller removes its own key's scope.
 */
export function restrictionWithinCallerKey (
  s: AdminScope,
  id: string,
  change: { scope?: readonly string[] | null | undefined, allowedCidrs?: readonly string[] | null | undefined }
): void {
  const key = s.key
  if (key === undefined) return
  if (key.addresses !== undefined && change.allowedCidrs === null) {
    throw denied(s, 'forbidden', 'a key bound to addresses removes no key\'s addresses', undefined,
      [{ field: 'allowed_cidrs', reason: 'the caller\'s key is bound to addresses; so are the keys it restricts' }])
  }
  if (key.addresses !== undefined && change.allowedCidrs != null) checkAddresses(s, key, change.allowedCidrs)
  if (id === key.id && key.scope !== undefined && change.scope === null) {
    throw denied(s, 'forbidden', 'a key does not remove its own scope', undefined,
      [{ field: 'scope', reason: 'the caller\'s own key is scoped; it stays so' }])
  }
}

/**
 * The person at the root of a new key's chain of creators, as `user:<id>`: the user its
 * creator names, else the root of the key the caller signed in with (`snap` holds that
 * key's record); undefined: none (the CLI, the admin token).
 */
export function creationOwner (s: AdminScope, snap: Snapshot, createdBy: string | undefined): string | undefined {
  const named = ownerOf(createdBy)
  if (named !== undefined) return userActor(named)
  const fields = s.key === undefined ? undefined : snap.keys.get(s.key.id)
  const root = fields?.type === undefined ? undefined : rootUserOf({ ...fields, type: fields.type })
  return root === undefined ? undefined : userActor(root)
}

function checkAddresses (s: AdminScope, key: CallerKey, cidrs: readonly string[]): void {
  // (a malformed entry is the shape check's to refuse, with a 400: key-input.ts)
  const outside = cidrs.filter((c) => cidrProblems([c]).length === 0 && key.addresses?.covers(c) !== true)
  if (outside.length === 0) return
  const reason = `beyond the caller's own addresses (${(key.addresses?.cidrs ?? []).join(' ')}): ${outside.join(' ')}`
  throw denied(s, 'forbidden', `a key's addresses are within the caller's own; ${reason}`, undefined,
    [{ field: 'allowed_cidrs', reason }])
}

function laterThanCaller (): AdminError {
  const why = 'a key expires no later than the key that creates it'
  return new AdminError(why, 'invalid', undefined, [{ field: 'expires_in', reason: why }])
}
