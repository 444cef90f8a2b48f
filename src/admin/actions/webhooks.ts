/**
 * Webhook endpoints (docs/webhooks.md): add (its URL's target resolved and judged now,
 * src/webhooks/targets.ts; the secret shown once, in the answer), list, show, remove,
 * a test event, an endpoint's deliveries, and a delivery sent again. Each change is
 * audited (`webhook.add`, `webhook.remove`, `webhook.resend`); the policy
 * (policy/webhooks.ts) decides who may.
 */
import { isoTimestamp } from '../../registry/records.js'
import { targetProblem } from '../../webhooks/targets.js'
import { AdminError } from '../model/errors.js'
import type { CreatedWebhook, DeliveryView, WebhookView } from '../model/webhooks.js'
import { decideAddWebhook, visibleWebhook, visibleWebhooks, type WebhookInput } from '../policy/webhooks.js'
import * as store from '../store/webhooks.js'
import { audited, type ActionContext } from './context.js'

export type { WebhookInput } from '../policy/webhooks.js'

export async function addWebhook (a: ActionContext, input: WebhookInput, now = Date.now()): Promise<CreatedWebhook> {
  return await audited(a, 'webhook.add', 'webhook', async () => {
    const problem = await targetProblem(input.url, a.allowPrivateTargets)
    const { org, events } = decideAddWebhook(a.scope, input, problem)
    const e: store.Endpoint = {
      id: store.newEndpointId(),
      url: input.url,
      events,
      org,
      description: input.description ?? '',
      created_at: isoTimestamp(now),
      created_by: a.store.actor,
      secret: store.newSecret()
    }
    await store.addWebhook(a.store, e)
    return { ...store.webhookView(e), secret: e.secret }
  })
}

export async function listWebhooks (a: ActionContext): Promise<WebhookView[]> {
  return visibleWebhooks(a.scope, await store.webhooks(a.store)).map(store.webhookView)
}

export async function showWebhook (a: ActionContext, id: string): Promise<WebhookView> {
  return store.webhookView(visibleWebhook(a.scope, id, await store.webhook(a.store, id)))
}

export async function removeWebhook (a: ActionContext, id: string): Promise<void> {
  await audited(a, 'webhook.remove', `webhook:${id}`, async () => {
    await store.removeWebhook(a.store, visibleWebhook(a.scope, id, await store.webhook(a.store, id)))
  })
}

/** Queues a `webhook.test` event to the endpoint; the delivery's id. */
export async function testWebhook (a: ActionContext, id: string, now = Date.now()): Promise<{ delivery: string }> {
  const e = visibleWebhook(a.scope, id, await store.webhook(a.store, id))
  return { delivery: await store.sendTest(a.store, e, now) }
}

export async function webhookDeliveries (a: ActionContext, id: string, limit: number): Promise<DeliveryView[]> {
  visibleWebhook(a.scope, id, await store.webhook(a.store, id))
  return await store.deliveries(a.store, id, limit)
}

export async function resendDelivery (
  a: ActionContext, id: string, deliveryId: string, now = Date.now()
): Promise<void> {
  await audited(a, 'webhook.resend', `webhook:${id}`, async () => {
    const e = visibleWebhook(a.scope, id, await store.webhook(a.store, id))
    const found = await store.deliveryOfEndpoint(a.store, id, deliveryId) &&
      await store.resendDelivery(a.store, e, deliveryId, now)
    if (!found) {
      throw new AdminError(`delivery "${deliveryId}" of webhook "${id}" does not exist`, 'not_found')
    }
  })
}
