/**
 * Which key a reported token is, if any: a live key whose record holds the token's
 * hash (policy/leaks.ts decides what the report does to it). A token is a key when:
 *
 *   keygate's format  its checksum holds, and the record its id names holds the SHA-256
 *                     of its secret
 *   any other         `imported:<sha256 of the token>` names a record that holds that
 *                     SHA-256 (an imported key): one Redis read, as the gateway's
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { hashSecret, parseKey } from '../../registry/key-format.js'
import type { StoreContext } from './transactions.js'

/**
 * The id of the key `token` is, when its record holds the token's hash (keygate's or an imported key's); otherwise
 * undefined.
 */
export async function liveKeyId (ctx: StoreContext, token: string): Promise<string | undefined> {
  const parsed = parseKey(token, ctx.keyPrefix)
  if (typeof parsed !== 'string') {
    return await holdsHash(
      ctx,
      parsed.id,
      hashSecret(parsed.secret)
    )
      ? parsed.id
      : undefined
  }
  // not keygate's format: an imported key's lookup (its plaintext never stored; its SHA-256 is)
  const sha256 = createHash('sha256').update(token).digest('hex')
  const id = await ctx.redis.get(ctx.keys.imported(sha256))
  if (id === null || id === '') return undefined
  return await holdsHash(ctx, id, sha256) ? id : undefined
}

async function holdsHash (ctx: StoreContext, id: string, hash: string): Promise<boolean> {
  const stored = await ctx.redis.hget(ctx.keys.key(id), 'hash')
  if (stored === null || !/^[0-9a-f]{64}$/.test(stored)) return false
  return timingSafeEqual(Buffer.from(hash, 'hex'), Buffer.from(stored, 'hex'))
}
