/**
 * /keys/:id/usage and /orgs/:org/usage: request counts per minute, hour or day
 * (src/registry/usage-reader.ts), scoped like reading the key or the org: a key outside
 * the caller's scope is 404, existing or not; an org outside it is 404; a self principal
 * reads its own keys' usage only. A range of more than MAX_POINTS buckets is a 400.
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { AdminError } from '../../registry/admin/index.js'
import { usageRange, type UsageRange } from '../../registry/usage-reader.js'
import { callerOf, requireScope, type ApiContext } from './context.js'
import { badField } from './refusal.js'
import { KeyParams, OrgParams, UsageQuery, UsageSeries } from './schemas.js'

export function usageRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Params: Static<typeof KeyParams>, Querystring: Static<typeof UsageQuery> }>('/keys/:id/usage', {
    schema: { summary: 'A key\'s request counts over a range (allowed, refused, limited, errors)', tags: ['usage'], params: KeyParams, querystring: UsageQuery, response: { 200: UsageSeries } }
  }, async (request) => {
    const range = rangeOf(request.query, Date.now())
    const { id } = request.params
    await callerOf(ctx, request).rules.visibleKey(id)
    return { points: await ctx.usage({ key: id }, range) }
  })

  app.get<{ Params: Static<typeof OrgParams>, Querystring: Static<typeof UsageQuery> }>('/orgs/:org/usage', {
    onRequest: requireScope('org'),
    schema: { summary: 'An org\'s request counts over a range, the sum of its keys', tags: ['usage'], params: OrgParams, querystring: UsageQuery, response: { 200: UsageSeries } }
  }, async (request) => {
    const range = rangeOf(request.query, Date.now())
    const { org } = request.params
    if (callerOf(ctx, request).rules.orgFilter(org) === null) throw new AdminError(`org "${org}" has no record`, 'not_found')
    return { points: await ctx.usage({ org }, range) }
  })
}

/** The query's range (usage-reader.ts); a bad one is a 400 naming its field. */
function rangeOf (q: Static<typeof UsageQuery>, now: number): UsageRange {
  const range = usageRange({ from: time('from', q.from), to: time('to', q.to), step: q.step }, now)
  if ('field' in range) throw badField(range.field, range.reason)
  return range
}

function time (field: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  // ISO 8601 with a date, like 2027-01-31T00:00:00Z (Date.parse alone also reads other forms)
  const ms = /^\d{4}-\d{2}-\d{2}(T[0-9:.]+(Z|[+-]\d{2}:\d{2})?)?$/.test(text) ? Date.parse(text) : NaN
  if (Number.isNaN(ms)) throw badField(field, 'expected an ISO 8601 time, like 2027-01-31T00:00:00Z')
  return ms
}
