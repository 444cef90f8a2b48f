/**
 * Allowances (docs/quotas.md): `GET /keys/:id/quota` (the key's quota and credits and its
 * org's, as they stand; whoever may read the key), `POST /keys/:id/quota` and
 * `POST /orgs/:org/quota` (admin only: set or remove the quota, add credits; audited
 * `quota.changed`, `credits.added`). Every read and write is one admin action.
 */
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { QUOTA_PATTERN } from '../../config/quota.js'
import { KeyQuotaViewSchema } from '../model/views.js'
import { actionsOf, requireAdmin, type ApiContext } from './context.js'
import { KeyParams, NoQuery, OrgParams } from './schemas.js'

const closed = { additionalProperties: false }
const Quota = Type.String({ pattern: QUOTA_PATTERN, description: '<count>/<day|week|month>, like 100000/month' })

/** not given: kept; null: removed. `add_credits`: units granted on top of the balance */
export const MeterBody = Type.Object({
  quota: Type.Optional(Type.Union([Quota, Type.Null()])),
  add_credits: Type.Optional(Type.Integer({ minimum: 1, maximum: 999_999_999_999_999 }))
}, closed)
const MeterChanged = Type.Object({ changed: Type.Boolean() }, closed)

export function quotaRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Params: Static<typeof KeyParams> }>('/keys/:id/quota', {
    schema: {
      summary: 'Show a key\'s quota and credits, and its org\'s',
      tags: ['keys'],
      params: KeyParams,
      querystring: NoQuery,
      response: { 200: KeyQuotaViewSchema }
    }
  }, async (request) => await actionsOf(ctx, request).keyQuota(request.params.id))

  app.post<{ Params: Static<typeof KeyParams>, Body: Static<typeof MeterBody> }>('/keys/:id/quota', {
    onRequest: requireAdmin,
    schema: {
      summary: 'Set or remove a key\'s quota, add credits',
      tags: ['keys'],
      params: KeyParams,
      querystring: NoQuery,
      body: MeterBody,
      response: { 200: MeterChanged }
    }
  }, async (request) => await actionsOf(ctx, request).meterKey(
    request.params.id, { quota: request.body.quota, addCredits: request.body.add_credits }
  ))

  app.post<{ Params: Static<typeof OrgParams>, Body: Static<typeof MeterBody> }>('/orgs/:org/quota', {
    onRequest: requireAdmin,
    schema: {
      summary: 'Set or remove an org\'s quota, add credits',
      tags: ['orgs'],
      params: OrgParams,
      querystring: NoQuery,
      body: MeterBody,
      response: { 200: MeterChanged }
    }
  }, async (request) => await actionsOf(ctx, request).meterOrg(
    request.params.org, { quota: request.body.quota, addCredits: request.body.add_credits }
  ))
}
