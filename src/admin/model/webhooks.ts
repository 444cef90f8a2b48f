/** Webhook endpoints and their deliveries as the admin wing shows them (docs/webhooks.md): never the secret. */

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

export interface DeliveryView {
  id: string
  event_id: string
  type: string
  status: 'pending' | 'retrying' | 'delivered' | 'failed'
  attempts: number
  last_status?: number
  last_error?: string
  latency_ms?: number
  created_at: string
  last_attempt_at?: string
  next_attempt_at?: string
}
