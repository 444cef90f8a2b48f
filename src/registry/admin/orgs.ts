/**
 * Org records (`keygate:org:<org>`): a display name and a rate limit, one bucket
 * shared by every key of the org. An org exists as a name on users and keys whether
 * or not it has a record; the record only adds these fields. Listed through the orgs
 * index set.
 */
import { bucketNames, bucketUse } from '../../ratelimit/buckets.js'
import { parseRateLimit } from '../../ratelimit/limit.js'
import { AdminError } from './errors.js'
import { checkName, checkRateLimit } from './rules.js'
import { audited, commit, hgetallMany, type StoreContext } from './transactions.js'
import type { OrgView } from './views.js'

export const ORG_NAME_MAX = 200

/** A field not given is kept as it is; `rateLimit: null` removes the org's limit. */
export interface OrgInput {
  name?: string | undefined
  rateLimit?: string | null | undefined
}

/** Returns the record as written; a record left with no field is gone (and leaves the index). */
export async function putOrg (ctx: StoreContext, org: string, input: OrgInput, now = Date.now()): Promise<OrgView> {
  return await audited(ctx, 'org.put', `org:${org}`, async () => {
    checkName('org', org)
    if (input.rateLimit === undefined && input.name === undefined) throw new AdminError('nothing to set: give a rate limit (or none to remove it) or a name')
    if (typeof input.rateLimit === 'string') checkRateLimit(input.rateLimit)
    if (input.name !== undefined && input.name.length > ORG_NAME_MAX) throw new AdminError(`the org name is longer than ${ORG_NAME_MAX} characters`)
    const fields: Record<string, string> = {}
    if (input.name !== undefined) fields.name = input.name
    if (typeof input.rateLimit === 'string') fields.rate_limit = input.rateLimit
    const tx = ctx.redis.multi()
    if (Object.keys(fields).length > 0) tx.hset(ctx.keys.org(org), fields)
    if (input.rateLimit === null) tx.hdel(ctx.keys.org(org), 'rate_limit')
    await commit(tx
      .sadd(ctx.keys.orgs, org)
      .xadd(...ctx.audit.changeArgs('org.put', `org:${org}`, 'ok', input.rateLimit === null ? { ...fields, rate_limit: '' } : fields, org)))
    const r = await ctx.redis.hgetall(ctx.keys.org(org))
    if (Object.keys(r).length === 0) await ctx.redis.srem(ctx.keys.orgs, org)
    const view = orgView(org, r)
    await withUse(ctx, view, now)
    return view
  })
}

export async function listOrgs (ctx: StoreContext, only?: string, now = Date.now()): Promise<OrgView[]> {
  const names = only !== undefined ? [only] : (await ctx.redis.smembers(ctx.keys.orgs)).sort()
  const records = await hgetallMany(ctx.redis, names.map((n) => ctx.keys.org(n)))
  const views = names.flatMap((org, i) => {
    const r = records[i]
    if (r === undefined || Object.keys(r).length === 0) return []
    return [orgView(org, r)]
  })
  await Promise.all(views.map(async (v) => { await withUse(ctx, v, now) }))
  return views
}

export async function showOrg (ctx: StoreContext, org: string, now = Date.now()): Promise<OrgView> {
  const r = await ctx.redis.hgetall(ctx.keys.org(org))
  if (Object.keys(r).length === 0) throw new AdminError(`org "${org}" has no record`, 'not_found')
  const view = orgView(org, r)
  await withUse(ctx, view, now)
  return view
}

function orgView (org: string, r: Record<string, string>): OrgView {
  const view: OrgView = { org }
  if (r.name !== undefined && r.name !== '') view.name = r.name
  if (r.rate_limit !== undefined && r.rate_limit !== '') view.rate_limit = r.rate_limit
  return view
}

async function withUse (ctx: StoreContext, view: OrgView, now: number): Promise<void> {
  const limit = view.rate_limit === undefined ? undefined : parseRateLimit(view.rate_limit)
  if (limit !== undefined) view.rate_limit_used = await bucketUse(ctx.redis, bucketNames(ctx.keys.rateLimit).org(view.org, limit), limit, now)
}
