/**
 * The authenticate stage as a pure decision over the resolved records: is the key good, and who is calling.
 * Each denial names its reason.
 */
import type { Reason } from '../errors.js'
import { digestMatches, secretMatches, type ParsedKey } from '../registry/key-format.js'
import { INVALID, mergeMeta, NO_GRANTS, scopedGrants, type IdentityRecord } from '../registry/records.js'
import type { Identity } from './identity.js'
import type { Resolved } from '../cache/resolve-identity.js'

export type Authenticated = { ok: true, identity: Identity } | { ok: false, reason: Reason }

/**
 * `digest`: the secret's SHA-256 when the caller already has it (an imported key's, whose lookup needed it), as
 * latin1
 */
export function authenticate (credential: ParsedKey, r: Resolved, now: number, digest?: string): Authenticated {
  const { key } = r
  if (key === null) return { ok: false, reason: r.limited === true ? 'unknown_key_limited' : 'unknown_key' }
  if (key === INVALID) return { ok: false, reason: 'invalid_record' }
  if (!(digest === undefined ? secretMatches(credential.secret, key.digest) : digestMatches(digest, key.digest))) {
    return { ok: false, reason: 'secret_mismatch' }
  }
  // a key's prefix names its environment, and its record must agree: a test key given the
  // live prefix (its checksum recomputed) is not a live key
  if (credential.env !== undefined && credential.env !== key.env) return { ok: false, reason: 'secret_mismatch' }
  if (key.status !== 'active') return { ok: false, reason: 'key_revoked' }
  if (key.expiresAt !== undefined && now >= key.expiresAt) return { ok: false, reason: 'key_expired' }

  let role = key.role as string
  if (key.type === 'personal') {
    const { user } = r
    if (user === null || user === undefined) return { ok: false, reason: 'user_missing' }
    if (user === INVALID) return { ok: false, reason: 'invalid_record' }
    if (user.status !== 'active') return { ok: false, reason: 'user_deactivated' }
    if (user.org !== key.org) return { ok: false, reason: 'org_mismatch' }
    role = user.role
  }
  // a BOT key's identity: its record must exist, parse and be of the key's org
  let ident: IdentityRecord | undefined
  if (key.identity !== undefined) {
    const d = r.identity
    if (d === null || d === undefined) return { ok: false, reason: 'identity_missing' }
    if (d === INVALID) return { ok: false, reason: 'invalid_record' }
    if (d.org !== key.org) return { ok: false, reason: 'org_mismatch' }
    ident = d
  }
  // A missing role grants nothing; a scope narrows what the role grants (worked out
  // once per scope and role, records.ts), so a key without one costs nothing here.
  const roleGrants = r.role?.grants ?? NO_GRANTS
  const restriction = key.restriction
  const meta = mergeMeta(key.meta, ident?.meta)
  return {
    ok: true,
    identity: {
      keyId: credential.id,
      type: key.type,
      env: key.env,
      userId: key.user,
      org: key.org,
      role,
      grants: restriction === undefined ? roleGrants : scopedGrants(roleGrants, restriction.scope),
      scope: restriction?.scope,
      roleGrants,
      addresses: restriction?.addresses,
      shadowRestriction: key.shadow,
      expiresAt: key.expiresAt,
      keyLimit: key.rateLimit,
      roleLimit: r.role?.rateLimit,
      orgLimit: r.org?.rateLimit,
      keyMeter: key.meter,
      orgMeter: r.org?.meter,
      identityId: ident === undefined ? undefined : key.identity,
      externalId: ident?.externalId,
      identityLimit: ident?.rateLimit,
      identityMeter: ident?.meter,
      meta
    }
  }
}
