/**
 * A new key's record: its shape checked (name, creator, rate limit, scope, addresses),
 * its owner resolved to its org (an active user with a complete record, or an existing
 * role), its expiry within the org's key policy and the creator's cap; and what its
 * creator is shown of it, once.
 */
import { INVALID, isoTimestamp, parseUserRecord } from '../../registry/records.js'
import { AdminError } from '../model/errors.js'
import type { Snapshot } from '../model/snapshot.js'
import type { CreatedKey } from '../model/views.js'
import { defaultExpiry, keyCapOf, overCap } from './key-expiry.js'
import {
  checkKeyExclusions, checkKeyLabels, checkKeyRequirements, checkKeyRestriction,
  type CreateKeyInput, type KeyOwnerFields, type KeyRestrictionInput
} from './key-input.js'
import { checkCredits, checkName, checkQuota, checkRateLimit } from './names.js'
import { checkIdentityId, checkKeyIdentity, checkMeta } from './identities.js'

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
  if (input.quota !== undefined) checkQuota(input.quota)
  if (input.credits !== undefined) checkCredits(input.credits)
  checkKeyRestriction(input)
  if (input.meta !== undefined) checkMeta(input.meta)
  if (input.identity !== undefined) {
    if (input.type !== 'bot') throw new AdminError('only a BOT key belongs to an identity')
    checkIdentityId(input.identity)
  }
  const org = resolveOwner(snap, input)
  if (input.identity !== undefined) checkKeyIdentity(snap, input.identity, org)
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
  if (input.owner !== undefined) record.owner = input.owner
  if (input.env === 'test') record.env = 'test'
  if (input.expiresInMs !== undefined) record.expires_at = isoTimestamp(o.now + input.expiresInMs)
  if (input.rateLimit !== undefined) record.rate_limit = input.rateLimit
  if (input.quota !== undefined) record.quota = input.quota
  if (input.credits !== undefined) record.credits = String(input.credits)
  if (input.meter !== undefined) record.meter = input.meter
  if (input.scope !== undefined) record.scope = input.scope.join(' ')
  if (input.allowedCidrs !== undefined) record.allowed_cidrs = input.allowedCidrs.join(' ')
  if (input.identity !== undefined) record.identity = input.identity
  if (input.meta !== undefined) record.meta = checkMeta(input.meta)
  return record
}

/** A key record as the audit trail may hold it: `meta` by its size alone (its content is never audited). */
export function auditedRecord (record: Record<string, string>): Record<string, string> {
  if (record.meta === undefined) return record
  return { ...record, meta: `${Buffer.byteLength(record.meta)} bytes` }
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
  if (record.env === 'test') created.env = 'test'
  if (record.user !== undefined) created.user = record.user
  if (record.role !== undefined) created.role = record.role
  if (record.expires_at !== undefined) created.expires_at = record.expires_at
  if (record.rate_limit !== undefined) created.rate_limit = record.rate_limit
  if (record.quota !== undefined) created.quota = record.quota
  if (record.credits !== undefined) created.credits = Number(record.credits)
  if (record.identity !== undefined) created.identity = record.identity
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
