/**
 * /webhooks (docs/webhooks.md): endpoints (add: the secret in the answer, once; list,
 * show, remove), a test event, an endpoint's deliveries, and a delivery sent again. An
 * admin manages every endpoint; an org admin its own org's (another org's is 404).
 */
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { EVENT_TYPES } from '../../webhooks/events.js'
import { actionsOf, requireScope, type ApiContext } from './context.js'
import { NoQuery } from './schemas.js'

const closed = { additionalProperties: false } as const
const WebhookId = Type.String({ pattern: '^wh_[A-Za-z0-9_-]{12}$' })
const DeliveryId = Type.String({ pattern: '^msg_[A-Za-z0-9_-]{22}\\.wh_[A-Za-z0-9_-]{12}$' })
const EventType = Type.Union(EVENT_TYPES.map((e) => Type.Literal(e)))
const Org = Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,127}$' })

const WebhookParams = Type.Object({ id: WebhookId }, closed)
const DeliveryParams = Type.Object({ id: WebhookId, delivery: DeliveryId }, closed)
const AddWebhookBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  events: Type.Array(EventType, { minItems: 1, maxItems: EVENT_TYPES.length }),
  /** an admin's endpoint for one org's events; an org admin's is its own org's */
  org: Type.Optional(Org),
  description: Type.Optional(Type.String({ maxLength: 200, pattern: '^[^\\u0000-\\u001f\\u007f]*$' }))
}, closed)
const WebhookSchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  org: Type.Optional(Type.String()),
  description: Type.String(),
  created_at: Type.String(),
  created_by: Type.String()
}, closed)
const CreatedWebhookSchema = Type.Object({
  ...WebhookSchema.properties,
  /** Standard Webhooks' `whsec_...`: shown once, here */
  secret: Type.String()
}, closed)
const DeliverySchema = Type.Object({
  id: Type.String(),
  event_id: Type.String(),
  type: Type.String(),
  status: Type.Union(['pending', 'retrying', 'delivered', 'failed'].map((s) => Type.Literal(s))),
  attempts: Type.Integer(),
  last_status: Type.Optional(Type.Integer()),
  last_error: Type.Optional(Type.String()),
  latency_ms: Type.Optional(Type.Integer()),
  created_at: Type.String(),
  last_attempt_at: Type.Optional(Type.String()),
  next_attempt_at: Type.Optional(Type.String())
}, closed)
const DeliveriesQuery = Type.Object({ limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,2}$' })) }, closed)

export function webhookRoutes (app: FastifyInstance, ctx: ApiContext): void {
  type Opts = { onRequest: ReturnType<typeof requireScope>, schema: Record<string, unknown> }
  const opts = (summary: string, rest: Record<string, unknown>): Opts =>
    ({ onRequest: requireScope('org'), schema: { summary, tags: ['webhooks'], ...rest } })

  const ADD = 'Add a webhook endpoint (its secret shown once)'
  app.post<{ Body: Static<typeof AddWebhookBody> }>('/webhooks', opts(ADD, {
    querystring: NoQuery, body: AddWebhookBody, response: { 201: CreatedWebhookSchema }
  }), async (request, reply) => {
    const created = await actionsOf(ctx, request).addWebhook(request.body)
    reply.code(201)
    return created
  })

  app.get('/webhooks', opts('List webhook endpoints', {
    querystring: NoQuery, response: { 200: Type.Object({ webhooks: Type.Array(WebhookSchema) }, closed) }
  }), async (request) => ({ webhooks: await actionsOf(ctx, request).listWebhooks() }))

  app.get<{ Params: Static<typeof WebhookParams> }>('/webhooks/:id', opts('Show a webhook endpoint', {
    params: WebhookParams, querystring: NoQuery, response: { 200: WebhookSchema }
  }), async (request) => await actionsOf(ctx, request).showWebhook(request.params.id))

  app.delete<{ Params: Static<typeof WebhookParams> }>('/webhooks/:id', opts('Remove a webhook endpoint', {
    params: WebhookParams, querystring: NoQuery, response: { 204: Type.Null() }
  }), async (request, reply) => {
    await actionsOf(ctx, request).removeWebhook(request.params.id)
    reply.code(204)
    return null
  })

  const TEST = 'Send a webhook.test event to the endpoint'
  app.post<{ Params: Static<typeof WebhookParams> }>('/webhooks/:id/test', opts(TEST, {
    params: WebhookParams, querystring: NoQuery, response: { 202: Type.Object({ delivery: Type.String() }, closed) }
  }), async (request, reply) => {
    const queued = await actionsOf(ctx, request).testWebhook(request.params.id)
    reply.code(202)
    return queued
  })

  app.get<{ Params: Static<typeof WebhookParams>, Querystring: Static<typeof DeliveriesQuery> }>(
    '/webhooks/:id/deliveries',
    opts('An endpoint\'s last deliveries: outcome, status, latency (newest first)', {
      params: WebhookParams,
      querystring: DeliveriesQuery,
      response: { 200: Type.Object({ deliveries: Type.Array(DeliverySchema) }, closed) }
    }),
    async (request) => ({
      deliveries: await actionsOf(ctx, request).webhookDeliveries(request.params.id, Number(request.query.limit ?? 100))
    })
  )

  const RESEND = '/webhooks/:id/deliveries/:delivery/resend'
  app.post<{ Params: Static<typeof DeliveryParams> }>(RESEND, opts('Send a delivery again', {
    params: DeliveryParams, querystring: NoQuery, response: { 202: Type.Object({ delivery: Type.String() }, closed) }
  }), async (request, reply) => {
    await actionsOf(ctx, request).resendDelivery(request.params.id, request.params.delivery)
    reply.code(202)
    return { delivery: request.params.delivery }
  })
}
