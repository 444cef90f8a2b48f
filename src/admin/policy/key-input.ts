/**
 * The shape of a key write, in itself (no registry read): who owns a key of each type,
 * its name and recorded creator, and what it may be narrowed to (its scope in the
 * permission grammar, its addresses as CIDRs, the gateway's own parsers).
 */
import { grantProblems } from '../../config/permission.js'
import { cidrProblems } from '../../registry/records.js'
import { isTypedActor } from '../model/actors.js'
import { AdminError } from '../model/errors.js'
import { KEY_NAME_MAX, KEY_RESTRICTION_MAX } from '../model/limits.js'

/** The owner fields of a key creation. */
export interface KeyOwnerFields {
  type: 'personal' | 'bot'
  user?: string | undefined
  role?: string | undefined
  org?: string | undefined
}

/** A personal key takes its org and role from its user; a BOT key has no user. */
export function checkKeyExclusions (r: KeyOwnerFields): void {
  if (r.type === 'personal' && (r.role !== undefined || r.org !== undefined)) {
    throw new AdminError('a personal key takes its org and role from its user: no role or org')
  }
  if (r.type === 'bot' && r.user !== undefined) throw new AdminError('a BOT key has no user')
}

/** A personal key needs its user; a BOT key its role and its org (that they exist is checked against the registry). */
export function checkKeyRequirements (r: KeyOwnerFields): void {
  if (r.type === 'personal' && r.user === undefined) throw new AdminError('a personal key needs a user')
  if (r.type === 'bot') {
    const missing = [r.role === undefined ? 'a role' : '', r.org === undefined ? 'an org' : ''].filter((m) => m !== '')
    if (missing.length > 0) throw new AdminError(`a BOT key needs ${missing.join(' and ')}`)
  }
}

/** Whether a key creation's owner fields fit its type (exclusions, then requirements); the refusal when not. */
export function keyOwnerProblem (r: KeyOwnerFields): AdminError | undefined {
  try {
    checkKeyExclusions(r)
    checkKeyRequirements(r)
    return undefined
  } catch (err: unknown) {
    if (err instanceof AdminError) return err
    throw err
  }
}

/** The key's name and its recorded creator (a typed actor: model/actors.ts). */
export function checkKeyLabels (r: { name?: string | undefined, createdBy?: string | undefined }): void {
  if (r.name !== undefined && r.name.length > KEY_NAME_MAX) {
    throw new AdminError(`the key name is longer than ${KEY_NAME_MAX} characters`)
  }
  if (r.createdBy !== undefined && !isTypedActor(r.createdBy)) {
    throw new AdminError(`invalid creator "${r.createdBy}" (expected user:<id>, key:<id>, cli:<name> or admin-token)`)
  }
}

/** What a key creation asks for, before the policy fills in defaults. */
export interface KeyRequest extends KeyOwnerFields, KeyRestrictionInput {
  name?: string | undefined
  expiresInMs?: number | undefined
  /** a user id: the key is recorded as created by that user (admin only) */
  createdBy?: string | undefined
  /** the key's own rate limit (admin only: a key's own limit replaces the default) */
  rateLimit?: string | undefined
  /** the key's allowance (admin only, docs/quotas.md): `<count>/<day|week|month>`, and credits granted */
  quota?: string | undefined
  credits?: number | undefined
  /** `test`: a test key (docs/test-keys.md); default `live` */
  env?: 'live' | 'test' | undefined
  /** BOT keys: the identity (of the key's org) whose limits and allowance the key shares (docs/identities.md) */
  identity?: string | undefined
  /** the key's `meta`: a JSON object of at most 1 KB */
  meta?: Record<string, unknown> | undefined
}

/** A key to write: a request as the scope rules let it through, defaults filled in. */
export interface CreateKeyInput extends KeyOwnerFields, KeyRestrictionInput {
  name?: string | undefined
  expiresInMs?: number | undefined
  /** a typed actor (model/actors.ts); default: the acting principal's actor */
  createdBy?: string | undefined
  /** `user:<id>`: the person at the root of the key's chain of creators (model/actors.ts rootUserOf) */
  owner?: string | undefined
  /** the key's own `rate_limit`, `<count>/<period>` */
  rateLimit?: string | undefined
  /** the key's `quota` and `credits` (docs/quotas.md) */
  quota?: string | undefined
  credits?: number | undefined
  /** a rotation's: the key whose count of the allowance the new key continues */
  meter?: string | undefined
  /** `test`: a test key, recorded as `env test` (absent: live) */
  env?: 'live' | 'test' | undefined
  /** BOT keys: the identity the key belongs to; `meta`: its metadata (docs/identities.md) */
  identity?: string | undefined
  meta?: Record<string, unknown> | undefined
  /**
   * the longest the creator may make it live (self service); no expiry asked means this, or the org's cap if shorter
   */
  expiresWithinMs?: number | undefined
}

/** What a key may be narrowed to: `scope` (permissions) and `allowed_cidrs`; undefined: not given. */
export interface KeyRestrictionInput {
  scope?: readonly string[] | undefined
  allowedCidrs?: readonly string[] | undefined
}

/**
 * A key's scope in the permission grammar and its addresses as IPv4/IPv6 CIDRs, every
 * bad entry named. An empty list is refused: `none` (null) removes a restriction, and
 * an empty scope would be a key that does nothing.
 */
export function checkKeyRestriction (r: KeyRestrictionInput): void {
  const details: Array<{ field: string, reason: string }> = []
  const lists = [['scope', r.scope, grantProblems], ['allowed_cidrs', r.allowedCidrs, cidrProblems]] as const
  for (const [field, list, problems] of lists) {
    if (list === undefined) continue
    if (list.length === 0) {
      details.push({
        field,
        reason: `an empty ${field}: give at least one entry, or none to remove it`
      })
    }
    if (list.length > KEY_RESTRICTION_MAX) {
      details.push({
        field,
        reason: `more than ${KEY_RESTRICTION_MAX} entries in ${field}`
      })
    }
    for (const reason of problems(list)) details.push({ field, reason })
  }
  if (details.length > 0) throw new AdminError(details.map((d) => d.reason).join('; '), 'invalid', undefined, details)
}
