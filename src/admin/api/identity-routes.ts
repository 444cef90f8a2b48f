/**
 * /identities (docs/identities.md): list, show (with its keys, its limit's use and its
 * allowance), its keys' views, put, delete (`?force=true` revokes its keys), and `POST .../quota` (set or
 * remove its quota, add credits). An admin every org's; an org admin its own org's only
 * (another org's identity is 404). Every read and write is one admin action.
 */
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { QUOTA_PATTERN } from '../../config/quota.js'
import { RATE_LIMIT_PATTERN } from '../../config/rate-limit.js'
import { IDENTITY_ID, NAME } from '../../registry/records.js'
import { IdentityViewSchema, KeyViewSchema } from '../model/views.js'
import { actionsOf, requireScope, type ApiContext } from './context.js'
import { NoQuery } from './schemas.js'
import { MeterBody } from './quota-routes.js'

const closed = { additionalProperties: false }
export const IdentityParams = Type.Object({ id: Type.String({ pattern: IDENTITY_ID.source }) }, closed)
const ListQuery = Type.Object({ org: Type.Optional(Type.String({ pattern: NAME.source })) }, closed)
const DeleteQuery = Type.Object(
  { force: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])) }, closed
)
/** not given: kept; null: removed. `org`: a new identity's (an org admin's own by default; never changed) */
const PutIdentityBody = Type.Object({
  org: Type.Optional(Type.String({ pattern: NAME.source })),
  external_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  meta: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
  rate_limit: Type.Optional(Type.Union([Type.String({ pattern: RATE_LIMIT_PATTERN }), Type.Null()])),
  quota: Type.Optional(Type.Union([Type.String({ pattern: QUOTA_PATTERN }), Type.Null()])),
  credits: Type.Optional(Type.Integer({ minimum: 0, maximum: 999_999_999_999_999 }))
}, closed)
const IdentityList = Type.Object({ identities: Type.Array(IdentityViewSchema) }, closed)
const IdentityKeys = Type.Object({ keys: Type.Array(KeyViewSchema) }, closed)
const PutIdentityResult = Type.Object({ created: Type.Boolean(), identity: IdentityViewSchema }, closed)
const DeleteResult = Type.Object({ revoked: Type.Array(Type.String()) }, closed)
const MeterChanged = Type.Object({ changed: Type.Boolean() }, closed)

export function identityRoutes (app: FastifyInstance, ctx: ApiContext): void {
  const orgAdmin = requireScope('org')
  app.get<{ Querystring: Static<typeof ListQuery> }>('/identities', {
    onRequest: orgAdmin,
    schema: {
      summary: 'List identities', tags: ['identities'], querystring: ListQuery, response: { 200: IdentityList }
    }
  }, async (request) => ({ identities: await actionsOf(ctx, request).listIdentities(request.query.org) }))

  app.get<{ Params: Static<typeof IdentityParams> }>('/identities/:id', {
    onRequest: orgAdmin,
    schema: {
      summary: 'Show an identity (its keys, its limit\'s use, its allowance)',
      tags: ['identities'],
      params: IdentityParams,
      querystring: NoQuery,
      response: { 200: IdentityViewSchema }
    }
  }, async (request) => await actionsOf(ctx, request).showIdentity(request.params.id))

  app.get<{ Params: Static<typeof IdentityParams> }>('/identities/:id/keys', {
    onRequest: orgAdmin,
    schema: {
      summary: 'The keys that name an identity',
      tags: ['identities'],
      params: IdentityParams,
      querystring: NoQuery,
      response: { 200: IdentityKeys }
    }
  }, async (request) => ({ keys: await actionsOf(ctx, request).identityKeys(request.params.id) }))

  app.put<{ Params: Static<typeof IdentityParams>, Body: Static<typeof PutIdentityBody> }>('/identities/:id', {
    onRequest: orgAdmin,
    schema: {
      summary: 'Create or change an identity',
      tags: ['identities'],
      params: IdentityParams,
      querystring: NoQuery,
      body: PutIdentityBody,
      response: { 200: PutIdentityResult, 201: PutIdentityResult }
    }
  }, async (request, reply) => {
    const b = request.body
    const result = await actionsOf(ctx, request).putIdentity(request.params.id, {
      org: b.org, externalId: b.external_id, meta: b.meta, rateLimit: b.rate_limit, quota: b.quota, credits: b.credits
    })
    reply.code(result.created ? 201 : 200)
    return result
  })

  app.delete<{ Params: Static<typeof IdentityParams>, Querystring: Static<typeof DeleteQuery> }>('/identities/:id', {
    onRequest: orgAdmin,
    schema: {
      summary: 'Delete an identity (refused while keys name it, unless force=true, which revokes them)',
      tags: ['identities'],
      params: IdentityParams,
      querystring: DeleteQuery,
      response: { 200: DeleteResult }
    }
  }, async (request) => await actionsOf(ctx, request).deleteIdentity(request.params.id, request.query.force === 'true'))

  app.post<{ Params: Static<typeof IdentityParams>, Body: Static<typeof MeterBody> }>('/identities/:id/quota', {
    onRequest: orgAdmin,
    schema: {
      summary: 'Set or remove an identity\'s quota, add credits',
      tags: ['identities'],
      params: IdentityParams,
      querystring: NoQuery,
      body: MeterBody,
      response: { 200: MeterChanged }
    }
  }, async (request) => await actionsOf(ctx, request).meterIdentity(
    request.params.id, { quota: request.body.quota, addCredits: request.body.add_credits }
  ))
}
