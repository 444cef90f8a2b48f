/**
 * Webhook endpoints and deliveries, as the admin wing reads and writes them: the Redis
 * layout is the webhooks' own (src/webhooks/endpoints.ts, deliveries.ts); an endpoint
 * is written with its audit entry in one transaction.
 */
import { deleteEndpoint, readEndpoint, readEndpoints, writeEndpoint, type Endpoint } from '../../webhooks/endpoints.js'
import { addDelivery, listDeliveries, readDeliveries, resend } from '../../webhooks/deliveries.js'
import { eventBody, eventId, TEST_EVENT } from '../../webhooks/events.js'
import { startCursor } from '../../webhooks/follow.js'
import type { DeliveryView, WebhookView } from '../model/webhooks.js'
import { commit, type StoreContext } from './transactions.js'

export type { Endpoint } from '../../webhooks/endpoints.js'
export { newEndpointId, newSecret } from '../../webhooks/endpoints.js'

export function webhookView (e: Endpoint): WebhookView {
  const { secret: _secret, org, ...rest } = e
  return org === undefined ? rest : { ...rest, org }
}

export async function webhook (ctx: StoreContext, id: string): Promise<Endpoint | undefined> {
  return await readEndpoint(ctx.redis, ctx.keys, id)
}

export async function webhooks (ctx: StoreContext): Promise<Endpoint[]> {
  return await readEndpoints(ctx.redis, ctx.keys)
}

export async function addWebhook (ctx: StoreContext, e: Endpoint): Promise<void> {
  const tx = ctx.redis.multi()
  // (the first endpoint's events are those of the changes after it: src/webhooks/follow.ts)
  startCursor(tx, ctx.keys)
  writeEndpoint(tx, ctx.keys, e)
  const detail = { url: e.url, events: e.events.join(' ') }
  tx.xadd(...ctx.audit.changeArgs('webhook.add', `webhook:${e.id}`, 'ok', detail, e.org))
  await commit(tx)
}

export async function removeWebhook (ctx: StoreContext, e: Endpoint): Promise<void> {
  const tx = ctx.redis.multi()
  deleteEndpoint(tx, ctx.keys, e.id)
  tx.xadd(...ctx.audit.changeArgs('webhook.remove', `webhook:${e.id}`, 'ok', { url: e.url }, e.org))
  await commit(tx)
}

export async function deliveries (ctx: StoreContext, endpointId: string, limit: number): Promise<DeliveryView[]> {
  return (await listDeliveries(ctx.redis, ctx.keys, endpointId, limit)).map(({ body: _body, endpoint: _e, ...d }) => d)
}

/** The delivery, if it is one of the endpoint's. */
export async function deliveryOfEndpoint (ctx: StoreContext, endpointId: string, id: string): Promise<boolean> {
  const [d] = await readDeliveries(ctx.redis, ctx.keys, [id])
  return d !== undefined && d.endpoint === endpointId
}

export async function resendDelivery (ctx: StoreContext, e: Endpoint, id: string, now: number): Promise<boolean> {
  const done = await resend(ctx.redis, ctx.keys, id, now)
  if (done) {
    await ctx.redis.xadd(...ctx.audit.changeArgs('webhook.resend', `webhook:${e.id}`, 'ok', { delivery: id }, e.org))
  }
  return done
}

/** A `webhook.test` event to this endpoint alone; its delivery id. */
export async function sendTest (ctx: StoreContext, e: Endpoint, now: number): Promise<string> {
  const at = new Date(now).toISOString()
  const body = eventBody({ type: TEST_EVENT, timestamp: at, data: { webhook_id: e.id } })
  return await addDelivery(ctx.redis, ctx.keys, e.id, eventId(), TEST_EVENT, body, now)
}
