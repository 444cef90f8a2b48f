/**
 * Leaked keys: each reported token that is a live keygate key is revoked in one change
 * of its own, with `revoked_reason leaked`, `leak_source` (where it was found) and one
 * audit entry `key.leaked`. Push invalidation then drops the record from every
 * gateway's cache and closes the key's open WebSockets (src/cache/invalidation.ts,
 * src/websocket/). A token is a key when:
 *
 *   keygate's format  its checksum holds, and the record its id names holds the SHA-256
 *                     of its secret
 *   any other         `imported:<sha256 of the token>` names a record that holds that
 *                     SHA-256 (an imported key, imports.ts): one Redis read, as the
 *                     gateway's
 *
 * A report is idempotent: a key already revoked is left as it is (a replayed report
 * changes nothing twice) and is still labelled a true positive. A token that is no key,
 * or whose key the caller may not see, is a false positive, revealing nothing.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import { createRedactor } from '../../redact.js'
import { hashSecret, parseKey } from '../../registry/key-format.js'
import { isoTimestamp } from '../../registry/records.js'
import { commit, type StoreContext } from './transactions.js'

export type LeakLabel = 'true_positive' | 'false_positive'

/** the longest `leak_source` kept (a URL); a longer one is cut */
export const LEAK_SOURCE_MAX = 1024

export interface LeakOutcome {
  label: LeakLabel
  /** the key id, for a true positive */
  id?: string
  /** whether this report revoked it (false: it was revoked already) */
  revoked?: boolean
}

/** One reported token and where it was found (a URL, or a scanner's own words). */
export interface LeakReport {
  token: string
  source: string
}

export interface LeakOptions {
  /** whether the caller sees the key (src/admin/policy/scope-rules.ts seesKey): one it does not is a false positive; none: every key */
  sees?: ((key: { type: string, org: string, user?: string | undefined, created_by?: string | undefined }) => boolean) | undefined
}

/** A label per report, in order. */
export async function revokeLeaked (ctx: StoreContext, reports: readonly LeakReport[], o: LeakOptions, now: number): Promise<LeakOutcome[]> {
  const out: LeakOutcome[] = []
  for (const { token, source } of reports) {
    const where = leakSource(source, ctx.keyPrefix)
    const id = await liveKeyId(ctx, token)
    if (id === undefined) {
      out.push({ label: 'false_positive' })
      continue
    }
    const [status, org, type, user, createdBy] = await ctx.redis.hmget(ctx.keys.key(id), 'status', 'org', 'type', 'user', 'created_by')
    if (status === null || status === undefined || (o.sees !== undefined && !o.sees({ type: type ?? '', org: org ?? '', user: user ?? undefined, created_by: createdBy ?? undefined }))) {
      out.push({ label: 'false_positive' })
      continue
    }
    if (status === 'revoked') {
      out.push({ label: 'true_positive', id, revoked: false })
      continue
    }
    await commit(ctx.redis.multi()
      .hset(ctx.keys.key(id), { status: 'revoked', revoked_at: isoTimestamp(now), revoked_reason: 'leaked', leak_source: where })
      .xadd(...ctx.audit.changeArgs('key.leaked', `key:${id}`, 'ok', { from: status as string, leak_source: where }, org ?? undefined)))
    out.push({ label: 'true_positive', id, revoked: true })
  }
  return out
}

/** The id of the key `token` is, when its record holds the token's hash (keygate's or an imported key's); otherwise undefined. */
async function liveKeyId (ctx: StoreContext, token: string): Promise<string | undefined> {
  const parsed = parseKey(token, ctx.keyPrefix)
  if (typeof parsed !== 'string') return await holdsHash(ctx, parsed.id, hashSecret(parsed.secret)) ? parsed.id : undefined
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

/** Printable, one line, bounded, no key in it: it is shown in `keys show`, the console and the audit trail. */
export function leakSource (source: string, keyPrefix: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = createRedactor(keyPrefix).text(source.replace(/[\u0000-\u001f\u007f]/g, '')).trim()
  return (clean === '' ? 'unknown' : clean).slice(0, LEAK_SOURCE_MAX)
}
