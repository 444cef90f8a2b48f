/**
 * Webhooks (docs/webhooks.md), as app.ts adds them: a Redis connection of their own,
 * the publisher (publisher.ts: quota thresholds queued as they are reached) and, with
 * `webhooks.enabled`, the dispatcher (dispatcher.ts), each a background part
 * (src/lifecycle.ts) stopping after the listeners: the thresholds reached last are
 * queued, the deliveries in flight settled, then the connection closes.
 *
 *   targets.ts       where a webhook may go (SSRF), at registration and at each connection
 *   events.ts        the event types, the payload, the events stream
 *   audit-events.ts  the events an admin change's audit entry means
 *   endpoints.ts     endpoints in Redis
 *   deliveries.ts    deliveries in Redis: the fan-out, the due set, the lease, the outcome
 *   follow.ts        the audit trail followed from a cursor: admin changes' events fanned out
 *   send.ts          one signed attempt (standardwebhooks, undici)
 *   expiring.ts      `key.expiring` from the index by expiry
 *   backfill.ts      the keys from before the index added to it, once per deployment
 *   publisher.ts     quota thresholds, queued
 *   dispatcher.ts    the loop: fan-out, expiring keys, deliveries and retries
 */
import type { Logger } from 'pino'
import type { Config } from '../config/schema.js'
import type { Background } from '../lifecycle.js'
import { createRedis } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { Dispatcher } from './dispatcher.js'
import { Publisher } from './publisher.js'

export { Publisher } from './publisher.js'
export { Dispatcher } from './dispatcher.js'

export interface Webhooks {
  publisher: Publisher
  dispatcher: Dispatcher | undefined
  /** in the order they are added to the lifecycle */
  parts: Background[]
}

export function createWebhooks (config: Config, keys: RedisKeys, logger: Logger): Webhooks {
  const redis = createRedis(config.redis)
  let failing = false
  const onError = (what: string) => (err: unknown): void => {
    // once an outage; never the command (its arguments name keys and endpoints)
    if (failing) return
    failing = true
    logger.warn({ cause: redis.status === 'ready' ? (err as Error).message : 'Redis unreachable', part: what },
      'webhooks: a step failed and will be tried again')
    setTimeout(() => { failing = false }, 60_000).unref()
  }
  redis.on('error', () => {})
  const publisher = new Publisher(redis, keys, onError('queue'))
  const dispatcher = config.webhooks.enabled
    ? new Dispatcher({ redis, keys, config: config.webhooks, onError: (what, err) => { onError(what)(err) } })
    : undefined
  const parts: Background[] = [{ name: 'webhooks connection', stop: () => { redis.disconnect() } }]
  if (dispatcher !== undefined) parts.push(dispatcher)
  parts.push({ name: 'webhook events', stop: async () => { await publisher.drain() } })
  return { publisher, dispatcher, parts }
}
