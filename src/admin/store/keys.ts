/**
 * Keys: create (the only moment the secret exists outside its holder), revoke, show,
 * list, and the key's own rate limit. A key is indexed in the global set, its org's set, and its owner's set (the
 * user of a personal key, the creating user of a BOT key). Nothing here returns a hash.
 */
import type { ChainableCommander } from 'ioredis'
import { generateKey } from '../../registry/key-format.js'
import { INVALID, isoTimestamp, parseTimestamp, parseUserRecord } from '../../registry/records.js'
import { ownerOf, readCreatedBy } from '../model/actors.js'
import { AdminError } from '../model/errors.js'
import { bucketNames, bucketUse } from '../../ratelimit/buckets.js'
import { parseRateLimit } from '../../config/rate-limit.js'
import { checkKeyExclusions, checkKeyLabels, checkKeyRequirements, checkKeyRestriction, checkName, checkRateLimit, ownsKey, type KeyOwnerFields, type KeyRestrictionInput } from '../policy/rules.js'
import { audited, commit, watching, type StoreContext } from './transactions.js'
import { orgKeyCap } from './orgs.js'
import type { RegistryClient } from '../../registry/redis-client.js'
import type { CreatedKey, KeyView } from '../model/views.js'

export interface CreateKeyInput extends KeyOwnerFields, KeyRestrictionInput {
  name?: string | undefined
  expiresInMs?: number | undefined
  /** a typed actor (actors.ts); default: the store's actor */
  createdBy?: string | undefined
  /** the key's own `rate_limit`, `<count>/<period>` */
  rateLimit?: string | undefined
  /** the longest the creator may make it live (self service); no expiry asked means this, or the org's cap if shorter */
  expiresWithinMs?: number | undefined
}

const KEY_FIELDS_SHOWN = ['type', 'org', 'user', 'role', 'name', 'status', 'created_at', 'created_by', 'expires_at', 'revoked_at', 'revoked_reason', 'leak_source', 'imported', 'replaces', 'replaced_by', 'rate_limit', 'scope', 'allowed_cidrs'] as const
/** fields shown as lists (space-separated in the record) */
const LIST_FIELDS = new Set<string>(['scope', 'allowed_cidrs'])

export async function createKey (ctx: StoreContext, input: CreateKeyInput, now: number): Promise<CreatedKey> {
  const target = input.type === 'personal' ? `user:${input.user ?? ''}` : `role:${input.role ?? ''}`
  return await audited(ctx, 'key.create', target, async () => {
    checkKeyExclusions(input)
    checkKeyRequirements(input)
    checkKeyLabels(input)
    if (input.rateLimit !== undefined) checkRateLimit(input.rateLimit)
    checkKeyRestriction(input)
    // WATCHed: the key takes the org its user (or role) has when it is written; a user
    // moved, deactivated or changed in between aborts the creation (409, nothing written)
    const owner = input.type === 'personal' ? ctx.keys.user(input.user as string) : ctx.keys.role(input.role as string)
    return await watching(ctx, 'create-key', [owner], async (conn) => {
      const org = await resolveOwner(ctx, input, conn)
      // the org's key policy, WATCHed too: no expiry asked means its cap, a longer one is refused
      await conn.watch(ctx.keys.org(org))
      const cap = await orgKeyCap(ctx, conn, org)
      if (cap !== undefined && input.expiresInMs !== undefined && input.expiresInMs > cap) {
        const why = `org "${org}" lets its keys live ${formatTtl(cap)} at most (key_max_ttl)`
        throw new AdminError(why, 'invalid', undefined, [{ field: 'expires_in', reason: why }])
      }
      const within = Math.min(cap ?? Infinity, input.expiresWithinMs ?? Infinity)
      const { created, record } = newKey(ctx, { ...input, expiresInMs: input.expiresInMs ?? (within === Infinity ? undefined : within) }, org, now)
      const tx = conn.multi()
      addKey(ctx, tx, created.id, record)
      tx.xadd(...ctx.audit.changeArgs('key.create', `key:${created.id}`, 'ok', withoutHash(record), org))
      await commit(tx, `${input.type === 'personal' ? 'the key\'s user' : 'the key\'s role'} changed while the key was created; nothing was written, try again`)
      return created
    })
  })
}

export async function revokeKey (ctx: StoreContext, id: string, now: number): Promise<{ changed: boolean }> {
  return await audited(ctx, 'key.revoke', `key:${id}`, async () => {
    const [status, org] = await ctx.redis.hmget(ctx.keys.key(id), 'status', 'org')
    if (status === null || status === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
    if (status === 'revoked') return { changed: false }
    await commit(ctx.redis.multi()
      .hset(ctx.keys.key(id), { status: 'revoked', revoked_at: isoTimestamp(now) })
      .xadd(...ctx.audit.changeArgs('key.revoke', `key:${id}`, 'ok', { from: status }, org ?? undefined)))
    return { changed: true }
  })
}

/** Keys of an org that outlive its key policy (`key_max_ttl`): no expiry, or one beyond now + the cap. */
export async function keysOverPolicy (ctx: StoreContext, org: string, now: number): Promise<KeyView[]> {
  const cap = await orgKeyCap(ctx, ctx.redis, org)
  if (cap === undefined) return []
  const views = await listKeys(ctx, { org }, now)
  return views.filter((k) => {
    if (k.status !== 'active') return false
    const expiry = parseTimestamp(k.expires_at ?? '')
    return expiry === undefined || expiry > now + cap
  })
}

export function formatTtl (ms: number): string {
  for (const [unit, size] of [['d', 86_400_000], ['h', 3_600_000], ['m', 60_000]] as const) if (ms % size === 0) return `${ms / size}${unit}`
  return `${Math.round(ms / 1000)}s`
}

/** A restriction change: a list sets the field, `null` removes it, undefined keeps it. */
export interface KeyRestrictionChange {
  scope?: readonly string[] | null | undefined
  allowedCidrs?: readonly string[] | null | undefined
}

/**
 * Sets or removes a key's `scope` and `allowed_cidrs`; every gateway applies the
 * change as it applies any edit of the record (push invalidation).
 */
export async function restrictKey (ctx: StoreContext, id: string, change: KeyRestrictionChange): Promise<{ changed: boolean }> {
  return await audited(ctx, 'key.restrict', `key:${id}`, async () => {
    checkKeyRestriction({ scope: change.scope ?? undefined, allowedCidrs: change.allowedCidrs ?? undefined })
    const [type, org, scope, cidrs] = await ctx.redis.hmget(ctx.keys.key(id), 'type', 'org', 'scope', 'allowed_cidrs')
    if (type === null || type === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
    const next = {
      scope: change.scope === undefined ? scope ?? null : change.scope === null ? null : change.scope.join(' '),
      allowed_cidrs: change.allowedCidrs === undefined ? cidrs ?? null : change.allowedCidrs === null ? null : change.allowedCidrs.join(' ')
    }
    if (next.scope === (scope ?? null) && next.allowed_cidrs === (cidrs ?? null)) return { changed: false }
    const tx = ctx.redis.multi()
    for (const [field, value] of Object.entries(next)) {
      if (value === null) tx.hdel(ctx.keys.key(id), field)
      else tx.hset(ctx.keys.key(id), field, value)
    }
    tx.xadd(...ctx.audit.changeArgs('key.restrict', `key:${id}`, 'ok', { scope: next.scope ?? '', allowed_cidrs: next.allowed_cidrs ?? '', from_scope: scope ?? '', from_allowed_cidrs: cidrs ?? '' }, org ?? undefined))
    await commit(tx)
    return { changed: true }
  })
}

/** Sets the key's own rate limit, or removes it (`null`: its role's, org's and the default limits still apply). */
export async function setKeyLimit (ctx: StoreContext, id: string, limit: string | null): Promise<{ changed: boolean }> {
  return await audited(ctx, 'key.limit', `key:${id}`, async () => {
    if (limit !== null) checkRateLimit(limit)
    const [type, org, current] = await ctx.redis.hmget(ctx.keys.key(id), 'type', 'org', 'rate_limit')
    if (type === null || type === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
    if ((current ?? null) === limit) return { changed: false }
    const tx = ctx.redis.multi()
    if (limit === null) tx.hdel(ctx.keys.key(id), 'rate_limit')
    else tx.hset(ctx.keys.key(id), 'rate_limit', limit)
    tx.xadd(...ctx.audit.changeArgs('key.limit', `key:${id}`, 'ok', { rate_limit: limit ?? '', from: current ?? '' }, org ?? undefined))
    await commit(tx)
    return { changed: true }
  })
}

export async function showKey (ctx: StoreContext, id: string, now: number): Promise<KeyView> {
  const [view] = await keyViews(ctx, [id], now)
  if (view === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
  return view
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
  return filter.user !== undefined ? ctx.keys.userKeys(filter.user) : filter.org !== undefined ? ctx.keys.orgKeys(filter.org) : ctx.keys.keys
}

/**
 * Whether a key is one the filter keeps. The record decides, not the index it was found
 * in: a key is in an org's listing only while its record says that org, in a user's
 * only while that user owns it.
 */
export function keyMatcher (filter: KeyFilter, now: number): (k: Pick<KeyView, 'id' | 'type' | 'org' | 'user' | 'role' | 'created_by' | 'created_at' | 'last_used_at'> & { name?: string | undefined }) => boolean {
  const q = filter.q?.toLowerCase()
  const cutoff = filter.unusedForMs === undefined ? undefined : now - filter.unusedForMs
  return (k) => {
    if (filter.user !== undefined && !ownsKey(filter.user, k)) return false
    if (filter.org !== undefined && k.org !== filter.org) return false
    if (cutoff !== undefined && (parseTimestamp(k.last_used_at ?? '') ?? parseTimestamp(k.created_at ?? '') ?? 0) >= cutoff) return false
    if (q !== undefined && q !== '' && ![k.name, k.id, k.user, k.role].some((v) => v?.toLowerCase().includes(q) === true)) return false
    return true
  }
}

/**
 * The new key's org, once its owner is found: an active user with a complete record, or
 * an existing role. `redis`: the connection that WATCHes the owner's record.
 */
export async function resolveOwner (ctx: StoreContext, input: KeyOwnerFields, redis: RegistryClient): Promise<string> {
  checkKeyRequirements(input)
  if (input.type === 'personal') {
    const id = input.user as string
    const fields = await redis.hgetall(ctx.keys.user(id))
    if (Object.keys(fields).length === 0) throw new AdminError(`user "${id}" does not exist`, 'not_found')
    const user = parseUserRecord(fields)
    if (user === INVALID) throw new AdminError(`user "${id}" has an incomplete record`, 'conflict')
    if (user.status !== 'active') throw new AdminError(`user "${id}" is deactivated`, 'conflict')
    return user.org
  }
  checkName('org', input.org as string)
  if (await redis.exists(ctx.keys.role(input.role as string)) === 0) throw new AdminError(`role "${input.role as string}" does not exist`, 'not_found')
  return input.org as string
}

/** A fresh secret and the record that holds its hash. */
export function newKey (ctx: StoreContext, input: CreateKeyInput, org: string, now: number): { created: CreatedKey, record: Record<string, string> } {
  const generated = generateKey(ctx.keyPrefix)
  const createdAt = isoTimestamp(now)
  const record: Record<string, string> = {
    type: input.type,
    hash: generated.hash,
    org,
    name: input.name ?? '',
    status: 'active',
    created_at: createdAt,
    created_by: input.createdBy ?? ctx.actor
  }
  if (input.type === 'personal') record.user = input.user as string
  else record.role = input.role as string
  if (input.expiresInMs !== undefined) record.expires_at = isoTimestamp(now + input.expiresInMs)
  if (input.rateLimit !== undefined) record.rate_limit = input.rateLimit
  if (input.scope !== undefined) record.scope = input.scope.join(' ')
  if (input.allowedCidrs !== undefined) record.allowed_cidrs = input.allowedCidrs.join(' ')
  const created: CreatedKey = { id: generated.id, key: generated.key, type: input.type, org, name: record.name as string, created_at: createdAt }
  if (record.user !== undefined) created.user = record.user
  if (record.role !== undefined) created.role = record.role
  if (record.expires_at !== undefined) created.expires_at = record.expires_at
  if (record.rate_limit !== undefined) created.rate_limit = record.rate_limit
  if (input.scope !== undefined) created.scope = [...input.scope]
  if (input.allowedCidrs !== undefined) created.allowed_cidrs = [...input.allowedCidrs]
  return { created, record }
}

/** Writes the record and its index entries into `tx`: the key's owner is its user, or the user who created a BOT key. */
export function addKey (ctx: StoreContext, tx: ChainableCommander, id: string, record: Record<string, string>): void {
  const owner = record.type === 'personal' ? record.user : ownerOf(record.created_by)
  tx.hset(ctx.keys.key(id), record).sadd(ctx.keys.keys, id).sadd(ctx.keys.orgKeys(record.org as string), id)
  if (owner !== undefined) tx.sadd(ctx.keys.userKeys(owner), id)
}

async function keyViews (ctx: StoreContext, ids: string[], now: number): Promise<KeyView[]> {
  const views = await recordViews(ctx, ids, now)
  await withLimitUse(ctx, views, now)
  return views
}

/** The keys' views from their records and last use, in one pipeline (ids without a record are left out; a failed read throws); no limit use. */
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
      if (v !== null && v !== undefined && v !== '') view[field] = LIST_FIELDS.has(field) ? v.split(/\s+/).filter((e) => e !== '') : v
    })
    if (view.name === undefined) view.name = ''
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

function withoutHash (record: Record<string, string>): Record<string, string> {
  const { hash: _hash, ...rest } = record
  return rest
}
