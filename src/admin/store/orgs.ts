/**
 * Org records (`keygate:org:<org>`): a display name, a rate limit, one bucket
 * shared by every key of the org, and `key_max_ttl`, the longest any key created or
 * rotated in the org lives (keys.ts and rotation.ts apply it: orgKeyCap). An org exists as a name on users and keys whether
 * or not it has a record; the record only adds these fields. Listed through the orgs
 * index set.
 */
import { bucketNames, bucketUse } from '../../ratelimit/buckets.js'
import { parseRateLimit } from '../../config/rate-limit.js'
import { parseDuration } from '../../config/duration.js'
import type { RegistryClient } from '../../registry/redis-client.js'
import { AdminError } from '../model/errors.js'
import { checkName, checkRateLimit } from '../policy/rules.js'
import { audited, commit, hgetallMany, type StoreContext } from './transactions.js'
import type { OrgView } from '../model/views.js'

export const ORG_NAME_MAX = 200

/** A field not given is kept as it is; `rateLimit: null` removes the org's limit, `keyMaxTtl: null` its key policy. */
export interface OrgInput {
  name?: string | undefined
  rateLimit?: string | null | undefined
  /** a duration (`90d`): every key created or rotated in the org expires within it */
  keyMaxTtl?: string | null | undefined
}

/**
 * The org's key policy, read on `redis` (the connection that WATCHes a key write, so
 * the write and the policy it obeyed are one): the longest a key of the org may live
 * (ms), or undefined. A malformed value (a hand edit) caps keys at nothing: refused.
 */
export async function orgKeyCap (ctx: StoreContext, redis: RegistryClient, org: string): Promise<number | undefined> {
  const text = await redis.hget(ctx.keys.org(org), 'key_max_ttl')
  if (text === null || text === undefined || text === '') return undefined
  const ms = parseDuration(text)
  if (ms === undefined || ms <= 0) throw new AdminError(`org "${org}" has a malformed key_max_ttl "${text}"; fix it with keygate orgs put`, 'conflict')
  return ms
}

/** Returns the record as written; a record left with no field is gone (and leaves the index). */
export async function putOrg (ctx: StoreContext, org: string, input: OrgInput, now = Date.now()): Promise<OrgView> {
  return await audited(ctx, 'org.put', `org:${org}`, async () => {
    checkName('org', org)
    if (input.rateLimit === undefined && input.name === undefined && input.keyMaxTtl === undefined) throw new AdminError('nothing to set: give a rate limit, a key max TTL (or none to remove one) or a name')
    if (typeof input.rateLimit === 'string') checkRateLimit(input.rateLimit)
    if (typeof input.keyMaxTtl === 'string' && !((parseDuration(input.keyMaxTtl) ?? 0) > 0)) {
      const why = `invalid key_max_ttl "${input.keyMaxTtl}" (a duration such as 90d, 24h)`
      throw new AdminError(why, 'invalid', undefined, [{ field: 'key_max_ttl', reason: why }])
    }
    if (input.name !== undefined && input.name.length > ORG_NAME_MAX) throw new AdminError(`the org name is longer than ${ORG_NAME_MAX} characters`)
    const fields: Record<string, string> = {}
    if (input.name !== undefined) fields.name = input.name
    if (typeof input.rateLimit === 'string') fields.rate_limit = input.rateLimit
    if (typeof input.keyMaxTtl === 'string') fields.key_max_ttl = input.keyMaxTtl
    const tx = ctx.redis.multi()
    if (Object.keys(fields).length > 0) tx.hset(ctx.keys.org(org), fields)
    if (input.rateLimit === null) tx.hdel(ctx.keys.org(org), 'rate_limit')
    if (input.keyMaxTtl === null) tx.hdel(ctx.keys.org(org), 'key_max_ttl')
    const removed = { ...input.rateLimit === null ? { rate_limit: '' } : {}, ...input.keyMaxTtl === null ? { key_max_ttl: '' } : {} }
    await commit(tx
      .sadd(ctx.keys.orgs, org)
      .xadd(...ctx.audit.changeArgs('org.put', `org:${org}`, 'ok', { ...fields, ...removed }, org)))
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
  if (r.key_max_ttl !== undefined && r.key_max_ttl !== '') view.key_max_ttl = r.key_max_ttl
  return view
}

async function withUse (ctx: StoreContext, view: OrgView, now: number): Promise<void> {
  const limit = view.rate_limit === undefined ? undefined : parseRateLimit(view.rate_limit)
  if (limit !== undefined) view.rate_limit_used = await bucketUse(ctx.redis, bucketNames(ctx.keys.rateLimit).org(view.org, limit), limit, now)
}
