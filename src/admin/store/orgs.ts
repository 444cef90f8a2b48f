/**
 * Org records (`keygate:org:<org>`): a display name, a rate limit (one bucket shared by
 * every key of the org) and `key_max_ttl`; each shown with its limit's use now. An org
 * exists as a name on users and keys whether or not it has a record. Listed as Redis
 * holds them (the orgs index set and a SCAN: record-names.ts).
 */
import type { ChainableCommander } from 'ioredis'
import { parseRateLimit } from '../../config/rate-limit.js'
import { bucketNames, bucketUse } from '../../ratelimit/buckets.js'
import { AdminError } from '../model/errors.js'
import { orgViewOf, type OrgView } from '../model/views.js'
import { escapeGlob } from '../../registry/redis-keys.js'
import { recordNames, scanKeys } from './record-names.js'
import { hgetallMany, type StoreContext } from './transactions.js'

/** Org records, each with its limit's use now; `only`: that org's alone. */
export async function listOrgs (ctx: StoreContext, only?: string, now = Date.now()): Promise<OrgView[]> {
  const names = only !== undefined ? [only] : await recordNames(ctx.redis, ctx.keys, 'org')
  const records = await hgetallMany(ctx.redis, names.map((n) => ctx.keys.org(n)))
  const views = names.flatMap((org, i) => {
    const r = records[i]
    if (r === undefined || Object.keys(r).length === 0) return []
    return [orgViewOf(org, r)]
  })
  await Promise.all(views.map(async (v) => { await withUse(ctx, v, now) }))
  return views
}

/** How many users and keys name an org (its index sets). */
export interface OrgUse { users: number, keys: number }

/**
 * The orgs named on users or keys, with or without a record: every org index set a
 * SCAN finds (`<prefix>org-users:*`, `<prefix>org-keys:*`), each with its size;
 * `only`: that org's alone.
 */
export async function orgsInUse (ctx: StoreContext, only?: string): Promise<Map<string, OrgUse>> {
  const sets = async (of: (org: string) => string): Promise<string[]> => {
    if (only !== undefined) return [only]
    const base = of('')
    return (await scanKeys(ctx.redis, `${escapeGlob(base)}*`)).map((k) => k.slice(base.length)).filter((o) => o !== '')
  }
  const orgs = [...new Set([...await sets(ctx.keys.orgUsers), ...await sets(ctx.keys.orgKeys)])].sort()
  if (orgs.length === 0) return new Map()
  const pipeline = ctx.redis.pipeline()
  for (const org of orgs) pipeline.scard(ctx.keys.orgUsers(org)).scard(ctx.keys.orgKeys(org))
  const replies = await pipeline.exec() ?? []
  const size = (i: number): number => typeof replies[i]?.[1] === 'number' ? replies[i][1] : 0
  const used = new Map<string, OrgUse>()
  orgs.forEach((org, i) => {
    const use = { users: size(2 * i), keys: size(2 * i + 1) }
    if (use.users + use.keys > 0) used.set(org, use)
  })
  return used
}

export async function showOrg (ctx: StoreContext, org: string, now = Date.now()): Promise<OrgView> {
  const r = await orgRecord(ctx, org)
  if (Object.keys(r).length === 0) throw new AdminError(`org "${org}" has no record`, 'not_found')
  const view = orgViewOf(org, r)
  await withUse(ctx, view, now)
  return view
}

/** The org's record as it is (`{}`: none). */
export async function orgRecord (ctx: StoreContext, org: string): Promise<Record<string, string>> {
  return await ctx.redis.hgetall(ctx.keys.org(org))
}

/** Sets and removes fields of an org record into `tx`, with its index entry. */
export function putOrg (
  ctx: StoreContext,
  tx: ChainableCommander,
  org: string,
  fields: Record<string,
  string>,
  removed: readonly string[]
): void {
  if (Object.keys(fields).length > 0) tx.hset(ctx.keys.org(org), fields)
  for (const field of removed) tx.hdel(ctx.keys.org(org), field)
  tx.sadd(ctx.keys.orgs, org)
}

/** The org's record as written (with its limit's use); a record left with no field is gone, and leaves the index. */
export async function orgAfterPut (ctx: StoreContext, org: string, now = Date.now()): Promise<OrgView> {
  const r = await orgRecord(ctx, org)
  if (Object.keys(r).length === 0) await ctx.redis.srem(ctx.keys.orgs, org)
  const view = orgViewOf(org, r)
  await withUse(ctx, view, now)
  return view
}

async function withUse (ctx: StoreContext, view: OrgView, now: number): Promise<void> {
  const limit = view.rate_limit === undefined ? undefined : parseRateLimit(view.rate_limit)
  if (limit !== undefined) {
    view.rate_limit_used = await bucketUse(
      ctx.redis,
      bucketNames(ctx.keys.rateLimit).org(view.org, limit),
      limit,
      now
    )
  }
}
