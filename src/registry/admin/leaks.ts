/**
 * Leaked keys: each reported token that is a live keygate key (its checksum, id and
 * secret hash all match a record) is revoked in one change of its own, with
 * `revoked_reason leaked`, `leak_source` (where it was found) and one audit entry
 * `key.leaked`. Push invalidation then drops the record from every gateway's cache and
 * closes the key's open WebSockets (src/cache/invalidation.ts, src/websocket/).
 *
 * A report is idempotent: a key already revoked is left as it is (a replayed report
 * changes nothing twice) and is still labelled a true positive. A token that is not a
 * keygate key, or whose key is outside `inOrg`, is a false positive, revealing nothing.
 */
import { timingSafeEqual } from 'node:crypto'
import { parseKey } from '../../decision/key-format.js'
import { createRedactor } from '../../redact.js'
import { hashSecret } from '../key-material.js'
import { isoTimestamp } from '../records.js'
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
  /** only keys of this org count (an org admin's report) */
  inOrg?: string | undefined
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
    const [status, org] = await ctx.redis.hmget(ctx.keys.key(id), 'status', 'org')
    if (status === null || status === undefined || (o.inOrg !== undefined && org !== o.inOrg)) {
      out.push({ label: 'false_positive' })
      continue
    }
    if (status === 'revoked') {
      out.push({ label: 'true_positive', id, revoked: false })
      continue
    }
    await commit(ctx.redis.multi()
      .hset(ctx.keys.key(id), { status: 'revoked', revoked_at: isoTimestamp(now), revoked_reason: 'leaked', leak_source: where })
      .xadd(...ctx.audit.changeArgs('key.leaked', `key:${id}`, 'ok', { from: status, leak_source: where }, org ?? undefined)))
    out.push({ label: 'true_positive', id, revoked: true })
  }
  return out
}

/** The id of the key `token` is, when its record holds the token's secret hash; otherwise undefined. */
async function liveKeyId (ctx: StoreContext, token: string): Promise<string | undefined> {
  const parsed = parseKey(token, ctx.keyPrefix)
  if (typeof parsed === 'string') return undefined
  const stored = await ctx.redis.hget(ctx.keys.key(parsed.id), 'hash')
  if (stored === null || !/^[0-9a-f]{64}$/.test(stored)) return undefined
  return timingSafeEqual(Buffer.from(hashSecret(parsed.secret), 'hex'), Buffer.from(stored, 'hex')) ? parsed.id : undefined
}

/** Printable, one line, bounded, no key in it: it is shown in `keys show`, the console and the audit trail. */
export function leakSource (source: string, keyPrefix: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = createRedactor(keyPrefix).text(source.replace(/[\u0000-\u001f\u007f]/g, '')).trim()
  return (clean === '' ? 'unknown' : clean).slice(0, LEAK_SOURCE_MAX)
}
