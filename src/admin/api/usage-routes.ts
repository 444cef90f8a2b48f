/**
 * /keys/:id/usage, /orgs/:org/usage and /identities/:id/usage (the sum of its keys): request
 * counts per minute, hour or day (src/usage/reader.ts), scoped like reading the key, the org
 * or the identity: a key outside the caller's scope is 404, existing or not; an org or an
 * identity outside it is 404; a self principal reads its own keys' usage only. A range of
 * more than MAX_POINTS buckets is a 400.
 * /usage/keys reads several keys' at once (up to BATCH_MAX_KEYS, BATCH_MAX_POINTS points
 * in all), each under the same rule: a key the caller may not read is absent.
 */
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { ID_LENGTH } from '../../registry/key-format.js'
import {
  BATCH_MAX_KEYS, BATCH_MAX_POINTS, bucketsOf, usageRange, type UsagePoint, type UsageRange
} from '../../usage/reader.js'
import { actionsOf, requireScope, type ApiContext } from './context.js'
import { IdentityParams } from './identity-routes.js'
import { badField } from './refusal.js'
import { KeyParams, OrgParams } from './schemas.js'

const closed = { additionalProperties: false } as const

/** a usage read: `from` and `to` ISO 8601 times (default: the last 24 h), `step` a bucket */
const UsageQuery = Type.Object({
  from: Type.Optional(Type.String({ maxLength: 40 })),
  to: Type.Optional(Type.String({ maxLength: 40 })),
  step: Type.Optional(Type.Union([Type.Literal('1m'), Type.Literal('1h'), Type.Literal('1d')]))
}, closed)

const Count = Type.Integer({ minimum: 0 })
const UsagePoints = Type.Array(Type.Object(
  { t: Type.String(), allowed: Count, refused: Count, limited: Count, errors: Count },
  closed
))
const UsageSeries = Type.Object({ points: UsagePoints }, closed)
/** a key's: with its environment, `live` or `test` (docs/test-keys.md) */
const KeyUsageSeries = Type.Object(
  { env: Type.Union([Type.Literal('live'), Type.Literal('test')]), points: UsagePoints }, closed
)

/** a batch usage read: up to BATCH_MAX_KEYS key ids, comma-separated, and the range of UsageQuery */
const KeysUsageQuery = Type.Object({
  ids: Type.String({ pattern: `^[0-9A-Za-z]{${ID_LENGTH}}(,[0-9A-Za-z]{${ID_LENGTH}}){0,${BATCH_MAX_KEYS - 1}}$` }),
  ...UsageQuery.properties
}, closed)
/** per key the caller may read (in the order asked; any other is absent): its totals over the range and its points */
const KeysUsage = Type.Object({
  keys: Type.Array(Type.Object({
    id: Type.String(),
    totals: Type.Object({ allowed: Count, refused: Count, limited: Count, errors: Count }, closed),
    points: UsagePoints
  }, closed))
}, closed)

/** an identity's: the sum of its keys' series, and how many keys were summed */
const IdentityUsageSeries = Type.Object({ keys: Count, points: UsagePoints }, closed)

export function usageRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Params: Static<typeof KeyParams>, Querystring: Static<typeof UsageQuery> }>('/keys/:id/usage', {
    schema: {
      summary: 'A key\'s request counts over a range (allowed, refused, limited, errors)',
      tags: ['usage'],
      params: KeyParams,
      querystring: UsageQuery,
      response: { 200: KeyUsageSeries }
    }
  }, async (request) => {
    const range = rangeOf(request.query, Date.now())
    return await actionsOf(ctx, request).keyUsage(request.params.id, range)
  })

  // several keys at once (the console's key list): one pipeline; a key the caller may
  // not read, or without a record, is left out of the answer, as if it did not exist
  app.get<{ Querystring: Static<typeof KeysUsageQuery> }>('/usage/keys', {
    schema: {
      summary: 'Several keys\' request counts over a range, at once (the console\'s key list)',
      tags: ['usage'],
      querystring: KeysUsageQuery,
      response: { 200: KeysUsage }
    }
  }, async (request) => {
    const range = rangeOf(request.query, Date.now())
    const ids = request.query.ids.split(',')
    if (new Set(ids).size * bucketsOf(range).count > BATCH_MAX_POINTS) {
      throw badField(
        'ids',
      `at most ${BATCH_MAX_POINTS} points in all (keys times points per key)`
      )
    }
    const read = await actionsOf(ctx, request).keysUsage(ids, range)
    return { keys: read.map((k) => ({ id: k.id, totals: totalsOf(k.points), points: k.points })) }
  })

  app.get<{ Params: Static<typeof IdentityParams>, Querystring: Static<typeof UsageQuery> }>('/identities/:id/usage', {
    onRequest: requireScope('org'),
    schema: {
      summary: 'An identity\'s request counts over a range, the sum of its keys',
      tags: ['usage'],
      params: IdentityParams,
      querystring: UsageQuery,
      response: { 200: IdentityUsageSeries }
    }
  }, async (request) => {
    const range = rangeOf(request.query, Date.now())
    return await actionsOf(ctx, request).identityUsage(request.params.id, range)
  })

  app.get<{ Params: Static<typeof OrgParams>, Querystring: Static<typeof UsageQuery> }>('/orgs/:org/usage', {
    onRequest: requireScope('org'),
    schema: {
      summary: 'An org\'s request counts over a range, the sum of its keys',
      tags: ['usage'],
      params: OrgParams,
      querystring: UsageQuery,
      response: { 200: UsageSeries }
    }
  }, async (request) => {
    const range = rangeOf(request.query, Date.now())
    return { points: await actionsOf(ctx, request).orgUsage(request.params.org, range) }
  })
}

function totalsOf (points: UsagePoint[]): { allowed: number, refused: number, limited: number, errors: number } {
  const t = { allowed: 0, refused: 0, limited: 0, errors: 0 }
  for (const p of points) {
    t.allowed += p.allowed
    t.refused += p.refused
    t.limited += p.limited
    t.errors += p.errors
  }
  return t
}

/** The query's range (reader.ts); a bad one is a 400 naming its field. */
function rangeOf (
  q: { from?: string | undefined, to?: string | undefined, step?: Static<typeof UsageQuery>['step'] },
  now: number
): UsageRange {
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
