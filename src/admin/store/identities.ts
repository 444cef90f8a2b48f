/**
 * Identity records (`keygate:identity:<id>`, docs/identities.md) and their indexes: the
 * set of every identity (`<prefix>identities`), each org's external ids
 * (`<prefix>org-identities:<org>`, a hash external_id -> identity id: an external id is
 * unique in its org) and the keys that name each (`<prefix>identity-keys:<id>`). Listed
 * as Redis holds them: the index set and a SCAN, so a record written with `redis-cli` is
 * listed too.
 */
import type { ChainableCommander } from 'ioredis'
import { parseRateLimit } from '../../config/rate-limit.js'
import { bucketNames, bucketUse } from '../../ratelimit/buckets.js'
import { identityViewOf, type IdentityView } from '../model/views.js'
import { allowanceOf } from './meters.js'
import { escapeGlob } from '../../registry/redis-keys.js'
import { scanKeys } from './record-names.js'
import { hgetallMany, type StoreContext } from './transactions.js'

/** Every identity id, sorted: the index's and the SCAN's (hashes only). */
export async function identityIds (ctx: StoreContext): Promise<string[]> {
  const ids = new Set(await ctx.redis.smembers(ctx.keys.identities))
  const base = ctx.keys.identity('')
  const scanned = (await scanKeys(ctx.redis, `${escapeGlob(base)}*`)).map((k) => k.slice(base.length))
  const unindexed = [...new Set(scanned)].filter((id) => id !== '' && !ids.has(id))
  if (unindexed.length > 0) {
    const pipeline = ctx.redis.pipeline()
    for (const id of unindexed) pipeline.type(ctx.keys.identity(id))
    const types = await pipeline.exec() ?? []
    unindexed.forEach((id, i) => { if (types[i]?.[1] === 'hash') ids.add(id) })
  }
  return [...ids].sort()
}

/** The identities (of `org` only, when given), as views without use. */
export async function listIdentities (ctx: StoreContext, org?: string): Promise<IdentityView[]> {
  const ids = await identityIds(ctx)
  const records = await hgetallMany(ctx.redis, ids.map((id) => ctx.keys.identity(id)))
  return ids.flatMap((id, i) => {
    const r = records[i]
    if (r?.org === undefined || (org !== undefined && r.org !== org)) return []
    return [identityViewOf(id, r)]
  })
}

export async function identityRecord (ctx: StoreContext, id: string): Promise<Record<string, string>> {
  return await ctx.redis.hgetall(ctx.keys.identity(id))
}

/** The identity id an org's external id names, or null. */
export async function identityByExternalId (
  ctx: StoreContext, org: string, externalId: string
): Promise<string | null> {
  return await ctx.redis.hget(ctx.keys.orgIdentities(org), externalId)
}

/** The ids of the keys that name the identity (its index set). */
export async function identityKeyIds (ctx: StoreContext, id: string): Promise<string[]> {
  return (await ctx.redis.smembers(ctx.keys.identityKeys(id))).sort()
}

/** An identity's whole view: its record, its keys, its limit's use now and its allowance as it stands. */
export async function identityView (
  ctx: StoreContext, id: string, r: Record<string, string>, now = Date.now()
): Promise<IdentityView> {
  const view = identityViewOf(id, r)
  view.keys = await identityKeyIds(ctx, id)
  const limit = view.rate_limit === undefined ? undefined : parseRateLimit(view.rate_limit)
  if (limit !== undefined) {
    view.rate_limit_used = await bucketUse(ctx.redis, bucketNames(ctx.keys.rateLimit).identity(id, limit), limit, now)
  }
  view.allowance = await allowanceOf(ctx, r, ctx.keys.meter('identity', id), now)
  return view
}

/** Sets and removes fields of an identity record into `tx`, with its index entries. */
export function putIdentity (
  ctx: StoreContext,
  tx: ChainableCommander,
  id: string,
  put: {
    org: string, fields: Record<string, string>, removed: readonly string[], formerExternalId?: string | undefined
  }
): void {
  if (Object.keys(put.fields).length > 0) tx.hset(ctx.keys.identity(id), put.fields)
  for (const field of put.removed) tx.hdel(ctx.keys.identity(id), field)
  tx.sadd(ctx.keys.identities, id)
  if (put.formerExternalId !== undefined) tx.hdel(ctx.keys.orgIdentities(put.org), put.formerExternalId)
  if (put.fields.external_id !== undefined) tx.hset(ctx.keys.orgIdentities(put.org), put.fields.external_id, id)
}

/** Removes an identity's record and its index entries into `tx` (its meter row too: nothing is left to spend it). */
export function deleteIdentity (
  ctx: StoreContext, tx: ChainableCommander, id: string, org: string, externalId: string
): void {
  tx.del(ctx.keys.identity(id), ctx.keys.identityKeys(id), ctx.keys.meter('identity', id))
  tx.srem(ctx.keys.identities, id)
  tx.hdel(ctx.keys.orgIdentities(org), externalId)
}
