/**
 * Key records: read as admins see them (never the secret, never its hash), listed
 * through the index sets (the global set, its org's, and its owner's: the user of a
 * personal key, the user at the root of a BOT key's chain of creators), and written into a change's
 * transaction with their index entries.
 */
import type { ChainableCommander } from 'ioredis'
import { parseRateLimit } from '../../config/rate-limit.js'
import { bucketNames, bucketUse } from '../../ratelimit/buckets.js'
import { parseTimestamp } from '../../registry/records.js'
import { examplesOf, RECENT_KEPT } from '../../usage/shadow-refusals.js'
import { ownsKey, readCreatedBy, rootUserOf } from '../model/actors.js'
import { AdminError } from '../model/errors.js'
import { metaObjectOf, type KeyView } from '../model/views.js'
import type { StoreContext } from './transactions.js'

const KEY_FIELDS_SHOWN = [
  'type',
  'org',
  'user',
  'role',
  'name',
  'status',
  'created_at',
  'created_by',
  'owner',
  'expires_at',
  'revoked_at',
  'revoked_reason',
  'leak_source',
  'imported',
  'env',
  'replaces',
  'replaced_by',
  'rate_limit',
  'quota',
  'credits',
  'meter',
  'scope',
  'allowed_cidrs',
  'shadow_scope',
  'shadow_allowed_cidrs',
  'shadow_since',
  'identity'
] as const
/** fields shown as lists (space-separated in the record) */
const LIST_FIELDS = new Set<string>(['scope', 'allowed_cidrs', 'shadow_scope', 'shadow_allowed_cidrs'])

/** One key's view: its listing's fields, with its `meta` and what its shadow restriction would have refused. */
export async function showKey (ctx: StoreContext, id: string, now: number): Promise<KeyView> {
  const [[view], meta] = await Promise.all([keyViews(ctx, [id], now), ctx.redis.hget(ctx.keys.key(id), 'meta')])
  if (view === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
  const parsed = metaObjectOf(meta)
  if (parsed !== undefined) view.meta = parsed
  if (view.shadow_since !== undefined) Object.assign(view, await shadowRefusalsOf(ctx, id))
  return view
}

/** What a key's shadow restriction was counted to refuse (src/usage/shadow-refusals.ts) */
async function shadowRefusalsOf (
  ctx: StoreContext, id: string
): Promise<Pick<KeyView, 'shadow_refused' | 'shadow_recent'>> {
  const [refused, recent] = await Promise.all([
    ctx.redis.hget(ctx.keys.shadowRefusals(id), 'refused'),
    ctx.redis.lrange(ctx.keys.shadowRecent(id), 0, RECENT_KEPT - 1)
  ])
  return { shadow_refused: Number.parseInt(refused ?? '0', 10) || 0, shadow_recent: examplesOf(recent) }
}

/** Deletes what a key's shadow restriction was counted to refuse, into `tx`. */
export function dropShadowRefusals (ctx: StoreContext, tx: ChainableCommander, id: string): void {
  tx.del(ctx.keys.shadowRefusals(id), ctx.keys.shadowRecent(id))
}

/** What a key listing keeps: by user, by org, unused for a while, matching a search. */
export interface KeyFilter {
  user?: string | undefined
  org?: string | undefined
  /** not used (nor created) within that long */
  unusedForMs?: number | undefined
  /** a case-insensitive substring of the key's name, id, user or role */
  q?: string | undefined
}

/** Keys by user, by org, or all (key id order), as the filter keeps them. */
export async function listKeys (ctx: StoreContext, filter: KeyFilter = {}, now = Date.now()): Promise<KeyView[]> {
  const views = await keyViews(ctx, (await ctx.redis.smembers(keyIndexOf(ctx, filter))).sort(), now)
  return views.filter(keyMatcher(filter, now))
}

/** The index set a listing reads: the user's keys, the org's keys, or every key. */
export function keyIndexOf (ctx: StoreContext, filter: KeyFilter): string {
  if (filter.user !== undefined) return ctx.keys.userKeys(filter.user)
  return filter.org !== undefined ? ctx.keys.orgKeys(filter.org) : ctx.keys.keys
}

/** What a listing's filter reads of a key. */
export type MatchedKey =
  Pick<KeyView, 'id' | 'type' | 'org' | 'user' | 'role' | 'created_by' | 'owner' | 'created_at' | 'last_used_at'> &
  { name?: string | undefined }

/**
 * Whether a key is one the filter keeps. The record decides, not the index it was found
 * in: a key is in an org's listing only while its record says that org, in a user's
 * only while that user owns it.
 */
export function keyMatcher (filter: KeyFilter, now: number): (k: MatchedKey) => boolean {
  const q = filter.q?.toLowerCase()
  const cutoff = filter.unusedForMs === undefined ? undefined : now - filter.unusedForMs
  return (k) => {
    if (filter.user !== undefined && !ownsKey(filter.user, k)) return false
    if (filter.org !== undefined && k.org !== filter.org) return false
    const lastUse = parseTimestamp(k.last_used_at ?? '') ?? parseTimestamp(k.created_at ?? '') ?? 0
    if (cutoff !== undefined && lastUse >= cutoff) return false
    if (q !== undefined && q !== '' && ![
      k.name,
      k.id,
      k.user,
      k.role
    ].some((v) => v?.toLowerCase().includes(q) === true)) return false
    return true
  }
}

/**
 * Writes a new key's record and its index entries into `tx`: its owner is its user, or the user at the root of a BOT
 * key's chain of creators.
 */
export function addKey (ctx: StoreContext, tx: ChainableCommander, id: string, record: Record<string, string>): void {
  const owner = rootUserOf({ type: record.type as string, ...record })
  tx.hset(ctx.keys.key(id), record).sadd(ctx.keys.keys, id).sadd(ctx.keys.orgKeys(record.org as string), id)
  if (owner !== undefined) tx.sadd(ctx.keys.userKeys(owner), id)
  // the index by expiry `key.expiring` is found in (src/webhooks/expiring.ts)
  const expiry = parseTimestamp(record.expires_at ?? '')
  if (expiry !== undefined) tx.zadd(ctx.keys.keyExpiry, expiry, id)
  if (record.identity !== undefined) tx.sadd(ctx.keys.identityKeys(record.identity), id)
}

/** Sets (a value) or removes (null) fields of a key record, into `tx`. */
export function setKeyFields (
  ctx: StoreContext,
  tx: ChainableCommander,
  id: string,
  fields: Record<string,
  string | null>
): void {
  const set = Object.entries(fields).filter((e): e is [string, string] => e[1] !== null)
  const removed = Object.keys(fields).filter((f) => fields[f] === null)
  if (set.length > 0) tx.hset(ctx.keys.key(id), Object.fromEntries(set))
  if (removed.length > 0) tx.hdel(ctx.keys.key(id), ...removed)
}

/** The lookup of an imported key: the SHA-256 of its token -> its id, into `tx`. */
export function addImportedLookup (ctx: StoreContext, tx: ChainableCommander, sha256: string, id: string): void {
  tx.set(ctx.keys.imported(sha256), id)
}

async function keyViews (ctx: StoreContext, ids: string[], now: number): Promise<KeyView[]> {
  const views = await recordViews(ctx, ids, now)
  await withLimitUse(ctx, views, now)
  return views
}

/**
 * The keys' views from their records and last use, in one pipeline (ids without a record are left out; a failed read
 * throws); no limit use.
 */
export async function recordViews (ctx: StoreContext, ids: string[], now: number): Promise<KeyView[]> {
  if (ids.length === 0) return []
  const pipeline = ctx.redis.pipeline()
  for (const id of ids) pipeline.hmget(ctx.keys.key(id), ...KEY_FIELDS_SHOWN)
  pipeline.hmget(ctx.keys.usage, ...ids)
  const replies = await pipeline.exec() ?? []
  // a failed read (a command timeout under load) fails the listing: it never reads as a missing key
  for (const [err] of replies) if (err !== null) throw err
  const usage = (replies[ids.length]?.[1] ?? []) as Array<string | null>
  return ids.flatMap((id, i) => {
    const values = (replies[i]?.[1] ?? []) as Array<string | null>
    if (values[0] === null || values[0] === undefined) return []
    const view: Record<string, string | string[]> = { id }
    KEY_FIELDS_SHOWN.forEach((field, j) => {
      const v = values[j]
      if (v === null || v === undefined || v === '') return
      view[field] = LIST_FIELDS.has(field) ? v.split(/\s+/).filter((e) => e !== '') : v
    })
    if (view.name === undefined) view.name = ''
    if (view.env !== undefined && view.env !== 'test') delete view.env
    const createdBy = readCreatedBy(view.created_by as string | undefined)
    if (createdBy !== undefined) view.created_by = createdBy
    const expiry = parseTimestamp(view.expires_at as string | undefined ?? '')
    if (view.status === 'active' && expiry !== undefined && expiry <= now) view.status = 'expired'
    const lastUsed = usage[i]
    if (lastUsed !== null && lastUsed !== undefined) view.last_used_at = lastUsed
    return [view as unknown as KeyView]
  })
}

/** Each key's own limit's use in its window now (one read per limited key). */
export async function withLimitUse (ctx: StoreContext, views: KeyView[], now: number): Promise<void> {
  const names = bucketNames(ctx.keys.rateLimit)
  await Promise.all(views.map(async (view) => {
    const limit = view.rate_limit === undefined ? undefined : parseRateLimit(view.rate_limit)
    if (limit !== undefined) view.rate_limit_used = await bucketUse(ctx.redis, names.key(view.id, limit), limit, now)
  }))
}
