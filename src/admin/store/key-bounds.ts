/**
 * What bounds a user's key records (docs/registry.md#key-records-are-bounded): the keys a
 * user owns as the cap and the purge read them, and a dead key's record deleted with its
 * index entries, its last use and, for an imported key, its token's lookup.
 */
import type { ChainableCommander } from 'ioredis'
import type { RegistryClient } from '../../registry/redis-client.js'
import { parseTimestamp } from '../../registry/records.js'
import { ownsKey } from '../model/actors.js'
import type { StoreContext } from './transactions.js'

/** A key a user owns: live (active and not expired), or the moment it ended (undefined: not known, kept). */
export interface OwnedKeyState {
  id: string
  live: boolean
  endedAt: number | undefined
  org: string | undefined
  /** an imported key's token SHA-256 (its lookup goes with it) */
  importedSha256: string | undefined
}

const FIELDS = ['type', 'user', 'owner', 'created_by', 'status', 'expires_at', 'revoked_at', 'org', 'hash', 'imported']

/** The keys `user` owns, through its index set, as they are now. */
export async function ownedKeyStates (
  conn: RegistryClient, ctx: StoreContext, user: string, now: number
): Promise<OwnedKeyState[]> {
  const ids = await conn.smembers(ctx.keys.userKeys(user))
  if (ids.length === 0) return []
  const pipeline = conn.pipeline()
  for (const id of ids) pipeline.hmget(ctx.keys.key(id), ...FIELDS)
  const replies = await pipeline.exec() ?? []
  // a failed read fails the creation: a key never reads as missing or dead
  for (const [err] of replies) if (err !== null) throw err
  return ids.flatMap((id, i) => {
    const v = ((replies[i]?.[1] ?? []) as Array<string | null>).map((x) => x ?? undefined)
    const [type, u, owner, createdBy, status, expiresAt, revokedAt, org, hash, imported] = v
    // (the record decides, not the index it was found in)
    if (type === undefined || !ownsKey(user, { type, user: u, owner, created_by: createdBy })) return []
    const expiry = parseTimestamp(expiresAt ?? '')
    const revoked = status !== 'active'
    const live = !revoked && (expiry === undefined || expiry > now)
    const endedAt = live ? undefined : revoked ? parseTimestamp(revokedAt ?? '') : expiry
    return [{ id, live, endedAt, org, importedSha256: imported !== undefined ? hash : undefined }]
  })
}

/** Deletes a dead key's record and everything that names it, into `tx`. */
export function purgeKey (ctx: StoreContext, tx: ChainableCommander, user: string, k: OwnedKeyState): void {
  tx.del(ctx.keys.key(k.id)).srem(ctx.keys.keys, k.id).srem(ctx.keys.userKeys(user), k.id).hdel(ctx.keys.usage, k.id)
  if (k.org !== undefined) tx.srem(ctx.keys.orgKeys(k.org), k.id)
  if (k.importedSha256 !== undefined) tx.del(ctx.keys.imported(k.importedSha256))
}
