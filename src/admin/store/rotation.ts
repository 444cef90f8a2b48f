/**
 * Rotation: a new key with the same type, owner, role, org, name, rate limit, scope and addresses; the old one keeps
 * working until now + grace (or its own earlier expiry), then only the new one does. A
 * personal key whose user has left the key's org is not rotated (409): the new key
 * keeps the key's org, never the user's current one.
 */
import { parseRateLimit } from '../../config/rate-limit.js'
import { isoTimestamp, parseTimestamp } from '../../registry/records.js'
import type { RegistryClient } from '../../registry/redis-client.js'
import { readCreatedBy } from '../model/actors.js'
import { AdminError } from '../model/errors.js'
import { addKey, newKey, resolveOwner, type CreateKeyInput } from './keys.js'
import { orgKeyCap } from './orgs.js'
import { audited, commit, watching, type StoreContext } from './transactions.js'
import type { RotatedKey } from '../model/views.js'

/** `botMaxTtlMs`: a new BOT key expires within this (a self-service rotation). */
export async function rotateKey (ctx: StoreContext, id: string, graceMs: number, botMaxTtlMs: number | undefined, now: number): Promise<RotatedKey> {
  // WATCHed: a revoke (or any edit) of the old key, or a move of a personal key's user,
  // between the reads and the write aborts the rotation instead of minting a
  // replacement for a revoked key or a key in an org its user has left
  return await audited(ctx, 'key.rotate', `key:${id}`, async () => await watching(ctx, 'rotate', [ctx.keys.key(id)], async (conn) => await rotateWatched(ctx, conn, id, graceMs, botMaxTtlMs, now)))
}

async function rotateWatched (ctx: StoreContext, conn: RegistryClient, id: string, graceMs: number, botMaxTtlMs: number | undefined, now: number): Promise<RotatedKey> {
  const old = await conn.hgetall(ctx.keys.key(id))
  if (old.type === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
  if (old.status !== 'active') throw new AdminError(`key "${id}" is ${old.status ?? 'in an unknown state'}; only an active key can be rotated`, 'conflict')
  const oldExpiry = old.expires_at === undefined ? undefined : parseTimestamp(old.expires_at)
  if (oldExpiry !== undefined && oldExpiry <= now) throw new AdminError(`key "${id}" has expired; create a new key instead`, 'conflict')
  if (old.type !== 'personal' && old.type !== 'bot') throw new AdminError(`key "${id}" has an unknown type "${old.type}"`, 'conflict')
  if (old.org === undefined) throw new AdminError(`key "${id}" has no org`, 'conflict')
  // the new key is the old one's: its type, org, owner (the user, or the role), name, creator and rate limit
  const owner = old.type === 'personal' ? { user: old.user } : { role: old.role, org: old.org }
  const input: CreateKeyInput = { type: old.type, ...owner, name: old.name, createdBy: readCreatedBy(old.created_by) }
  // (a malformed limit is not carried over: the new key gets the default until an admin sets one)
  if (old.rate_limit !== undefined && parseRateLimit(old.rate_limit) !== undefined) input.rateLimit = old.rate_limit
  // its scope and addresses, as they are: a replacement is never wider than the key it replaces
  if (old.scope !== undefined && old.scope !== '') input.scope = old.scope.split(/\s+/).filter((p) => p !== '')
  if (old.allowed_cidrs !== undefined && old.allowed_cidrs !== '') input.allowedCidrs = old.allowed_cidrs.split(/\s+/).filter((c) => c !== '')
  if (old.type === 'personal' && old.user !== undefined) await conn.watch(ctx.keys.user(old.user))
  const userOrg = await resolveOwner(ctx, input, conn)
  // a personal key acts as its user in the key's org; once the user has left that org the
  // key is dead, and a replacement would act in the user's new org for whoever holds it
  if (userOrg !== old.org) {
    const why = 'the user is no longer in the key\'s org'
    throw new AdminError(`key "${id}": ${why} (${old.org}); create a new key for the user instead`, 'conflict', undefined, [{ field: 'user', reason: why }])
  }
  const org = old.org
  // the new key keeps the old one's expiry, if it had one
  if (oldExpiry !== undefined) input.expiresInMs = oldExpiry - now
  if (botMaxTtlMs !== undefined && old.type === 'bot') input.expiresInMs = Math.min(input.expiresInMs ?? botMaxTtlMs, botMaxTtlMs)
  // the org's key policy as it is now: the new key expires within it
  await conn.watch(ctx.keys.org(org))
  const cap = await orgKeyCap(ctx, conn, org)
  if (cap !== undefined) input.expiresInMs = Math.min(input.expiresInMs ?? cap, cap)
  const { created, record } = newKey(ctx, input, org, now)
  record.replaces = id
  const graceEnd = Math.min(now + graceMs, oldExpiry ?? Number.POSITIVE_INFINITY)
  const replacesExpiresAt = isoTimestamp(graceEnd)
  const tx = conn.multi()
  addKey(ctx, tx, created.id, record)
  tx.hset(ctx.keys.key(id), { expires_at: replacesExpiresAt, replaced_by: created.id })
  tx.xadd(...ctx.audit.changeArgs('key.rotate', `key:${id}`, 'ok', { new_key: created.id, replaces_expires_at: replacesExpiresAt }, org))
  await commit(tx, `key "${id}" changed during the rotation; nothing was written, try again`)
  return { ...created, replaces: id, replaces_expires_at: replacesExpiresAt }
}
