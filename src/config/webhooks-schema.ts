/**
 * `webhooks`: signed events sent to the endpoints admins register (docs/webhooks.md,
 * src/webhooks/). Part of the configuration schema (schema.ts).
 */
import { Type } from '@sinclair/typebox'

const Duration = (fallback: string) => Type.String({
  pattern: '^[1-9][0-9]{0,8}[smhd]$', default: fallback, description: `a duration above zero, like ${fallback}`
})

export const WebhooksSchema = Type.Object({
  /** false: no dispatcher runs in this instance (events are still queued for the instances that run one) */
  enabled: Type.Boolean({ default: true }),
  /**
   * endpoints that resolve to loopback, link-local, private, CGNAT, metadata or unspecified addresses are
   * refused (at registration and at every delivery) unless this is true
   */
  allow_private_targets: Type.Boolean({ default: false }),
  /** how long before a key's `expires_at` its `key.expiring` is sent */
  expiring_before: Duration('7d'),
  /** how often each instance looks for due deliveries, new events and keys about to expire */
  poll_ms: Type.Integer({ minimum: 10, maximum: 60_000, default: 1_000 }),
  /** one delivery's request: connect, send, and read the answer, at most */
  timeout_ms: Type.Integer({ minimum: 100, maximum: 60_000, default: 10_000 }),
  /** the most of a receiver's answer read (the rest is dropped) */
  max_response_bytes: Type.Integer({ minimum: 0, maximum: 1_048_576, default: 4_096 }),
  /** deliveries one instance has in flight at once */
  concurrency: Type.Integer({ minimum: 1, maximum: 1_000, default: 16 }),
  retry: Type.Object({
    /** the wait after a delivery's first failure; doubled after each one, up to max_delay_ms */
    base_delay_ms: Type.Integer({ minimum: 1, maximum: 3_600_000, default: 5_000 }),
    max_delay_ms: Type.Integer({ minimum: 1, maximum: 86_400_000, default: 3_600_000 }),
    /** how long a delivery is retried after its event, before it is marked failed */
    give_up_after: Duration('25h')
  }, { additionalProperties: false, default: {} }),
  /** how long a delivery's record (its outcome, status, latency) stays listed */
  deliveries_retention: Duration('7d')
}, { additionalProperties: false, default: {} })
