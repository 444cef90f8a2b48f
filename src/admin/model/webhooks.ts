/** Webhook endpoints and their deliveries as the admin wing shows them (docs/webhooks.md): never the secret. */
import type { Delivery } from '../../webhooks/deliveries.js'

export interface WebhookView {
  id: string
  url: string
  events: string[]
  /** an org's endpoint (its events only); absent: an admin's (every org's events) */
  org?: string
  description: string
  created_at: string
  created_by: string
}

/** The one answer that holds the secret: the endpoint's creation. */
export interface CreatedWebhook extends WebhookView {
  secret: string
}

/** A delivery as listed: the record the dispatcher keeps (src/webhooks/deliveries.ts), without its endpoint or body. */
export type DeliveryView = Omit<Delivery, 'endpoint' | 'body'>
