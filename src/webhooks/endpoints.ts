/**
 * Webhook endpoints in Redis (docs/registry.md): a hash per endpoint (`webhook:<id>`)
 * and the set of their ids (`webhooks`). The admin wing writes them
 * (src/admin/store/webhooks.ts); the dispatcher reads them. The secret is kept here,
 * to sign with, and shown only once, when the endpoint is created.
 */
import { randomBytes } from 'node:crypto'
import type { ChainableCommander } from 'ioredis'
import type { RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'

export interface Endpoint {
  id: string
  url: string
  /** the event types it gets */
  events: string[]
  /** an org's endpoint gets only that org's events; undefined: every event (an admin's) */
  org: string | undefined
  description: string
  created_at: string
  created_by: string
  /** Standard Webhooks' `whsec_<base64>` */
  secret: string
}

export function newEndpointId (): string {
  return `wh_${randomBytes(9).toString('base64url')}`
}

/** A Standard Webhooks secret: `whsec_` and 32 random bytes in base64. */
export function newSecret (): string {
  return `whsec_${randomBytes(32).toString('base64')}`
}

export function endpointOf (id: string, h: Record<string, string>): Endpoint | undefined {
  if (h.url === undefined || h.secret === undefined) return undefined
  return {
    id,
    url: h.url,
    events: (h.events ?? '').split(' ').filter((e) => e !== ''),
    org: h.org === undefined || h.org === '' ? undefined : h.org,
    description: h.description ?? '',
    created_at: h.created_at ?? '',
    created_by: h.created_by ?? '',
    secret: h.secret
  }
}

export async function readEndpoint (redis: RegistryClient, keys: RedisKeys, id: string): Promise<Endpoint | undefined> {
  return endpointOf(id, await redis.hgetall(keys.webhook(id)))
}

/** Every endpoint (id order). */
export async function readEndpoints (redis: RegistryClient, keys: RedisKeys): Promise<Endpoint[]> {
  const ids = (await redis.smembers(keys.webhooks)).sort()
  if (ids.length === 0) return []
  const pipeline = redis.pipeline()
  for (const id of ids) pipeline.hgetall(keys.webhook(id))
  const replies = await pipeline.exec() ?? []
  return ids.flatMap((id, i) => {
    const [err, h] = replies[i] ?? [null, {}]
    if (err !== null) throw err
    const e = endpointOf(id, h as Record<string, string>)
    return e === undefined ? [] : [e]
  })
}

export function writeEndpoint (tx: ChainableCommander, keys: RedisKeys, e: Endpoint): void {
  tx.hset(keys.webhook(e.id), {
    url: e.url,
    events: e.events.join(' '),
    org: e.org ?? '',
    description: e.description,
    created_at: e.created_at,
    created_by: e.created_by,
    secret: e.secret
  }).sadd(keys.webhooks, e.id)
}

export function deleteEndpoint (tx: ChainableCommander, keys: RedisKeys, id: string): void {
  tx.del(keys.webhook(id), keys.webhookDeliveries(id)).srem(keys.webhooks, id)
}

/** Whether an endpoint gets an event: it asked for its type, and it is an admin's or of the event's org. */
export function wants (e: Endpoint, type: string, org: string | undefined): boolean {
  return e.events.includes(type) && (e.org === undefined || e.org === org)
}
