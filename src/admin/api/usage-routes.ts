/**
 * /keys/:id/usage and /orgs/:org/usage: request counts per minute, hour or day
 * (src/registry/usage-reader.ts), scoped like reading the key or the org: a key outside
 * the caller's scope is 404, existing or not; an org outside it is 404; a self principal
 * reads its own keys' usage only. A range of more than MAX_POINTS buckets is a 400.
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { AdminError } from '../../registry/admin/index.js'
import { bucketsOf, MAX_POINTS, STEPS, type UsageRange } from '../../registry/usage-reader.js'
import { callerOf, requireScope, type ApiContext } from './context.js'
import { badField } from './refusal.js'
import { KeyParams, OrgParams, UsageQuery, UsageSeries } from './schemas.js'

const DAY_MS = 86_400_000

export function usageRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Params: Static<typeof KeyParams>, Querystring: Static<typeof UsageQuery> }>('/keys/:id/usage', {
    schema: { params: KeyParams, querystring: UsageQuery, response: { 200: UsageSeries } }
  }, async (request) => {
    const range = usageRange(request.query, Date.now())
    const { id } = request.params
    await callerOf(ctx, request).rules.visibleKey(id)
    return { points: await ctx.usage({ key: id }, range) }
  })

  app.get<{ Params: Static<typeof OrgParams>, Querystring: Static<typeof UsageQuery> }>('/orgs/:org/usage', {
    onRequest: requireScope('org'),
    schema: { params: OrgParams, querystring: UsageQuery, response: { 200: UsageSeries } }
  }, async (request) => {
    const range = usageRange(request.query, Date.now())
    const { org } = request.params
    if (callerOf(ctx, request).rules.orgFilter(org) === null) throw new AdminError(`org "${org}" has no record`, 'not_found')
    return { points: await ctx.usage({ org }, range) }
  })
}

/**
 * The query's range, step 1h unless given: `to` now (the end of the current step) and
 * `from` 24 h before `to` unless given (24 points by the hour); bounded.
 */
export function usageRange (q: Static<typeof UsageQuery>, now: number): UsageRange {
  const step = q.step ?? '1h'
  const to = q.to === undefined ? Math.ceil((now + 1) / STEPS[step]) * STEPS[step] : time('to', q.to)
  const from = q.from === undefined ? to - DAY_MS : time('from', q.from)
  if (from > to) throw badField('from', 'after to')
  const range: UsageRange = { from, to, step }
  if (bucketsOf(range).count > MAX_POINTS) throw badField('step', `the range holds more than ${MAX_POINTS} points at this step`)
  return range
}

function time (field: string, text: string): number {
  // ISO 8601 with a date, like 2027-01-31T00:00:00Z (Date.parse alone also reads other forms)
  const ms = /^\d{4}-\d{2}-\d{2}(T[0-9:.]+(Z|[+-]\d{2}:\d{2})?)?$/.test(text) ? Date.parse(text) : NaN
  if (Number.isNaN(ms)) throw badField(field, 'expected an ISO 8601 time, like 2027-01-31T00:00:00Z')
  return ms
}
