/**
 * Deliveries in Redis: one hash per (event, endpoint) (`webhook-delivery:<event>.<endpoint>`),
 * the due set (`webhook-due`, by next attempt) every dispatcher claims from, and each
 * endpoint's listing (`webhook-deliveries:<endpoint>`, the last LISTED kept).
 *
 * A claim (`claimDue`, one script) moves the due deliveries' next attempt a lease ahead,
 * so the instance that claimed one is the only one sending it; if it dies mid-send the
 * lease runs out and another instance sends it again (at least once). A delivery is
 * settled delivered, retried later (exponential backoff), or failed once
 * `retry.give_up_after` has passed since its event.
 */
import type { ChainableCommander } from 'ioredis'
import type { RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { wants, type Endpoint } from './endpoints.js'

/** an endpoint's listing keeps its last LISTED deliveries */
export const LISTED = 1_000

export type DeliveryStatus = 'pending' | 'retrying' | 'delivered' | 'failed'

export interface Delivery {
  id: string
  endpoint: string
  event_id: string
  type: string
  status: DeliveryStatus
  attempts: number
  /** the receiver's last HTTP status; undefined: no answer (see `last_error`) */
  last_status?: number
  /** why the last attempt got no answer (timeout, refused address, connection) */
  last_error?: string
  /** the last attempt's time to the answer's headers, ms */
  latency_ms?: number
  created_at: string
  last_attempt_at?: string
  next_attempt_at?: string
  /** the body as sent */
  body: string
}

export function deliveryId (eventId: string, endpointId: string): string {
  return `${eventId}.${endpointId}`
}

/** An event as fanned out: its id, type, org and time, and its body as sent. */
export interface FannedOut {
  id: string
  type: string
  org: string | undefined
  timestamp: string
  body: string
}

/**
 * Writes into `tx` a new delivery of the event for each endpoint that wants it, due
 * `now`, each in its endpoint's listing (the fan-out's transaction).
 */
export function writeDeliveries (
  tx: ChainableCommander, keys: RedisKeys, endpoints: readonly Endpoint[], e: FannedOut, now: number
): void {
  for (const endpoint of endpoints) {
    if (!wants(endpoint, e.type, e.org)) continue
    const id = deliveryId(e.id, endpoint.id)
    tx.hset(keys.webhookDelivery(id), newDelivery(e.id, endpoint.id, e.type, e.body, e.timestamp))
    tx.zadd(keys.webhookDue, now, id).zadd(keys.webhookDeliveries(endpoint.id), now, id)
    tx.zremrangebyrank(keys.webhookDeliveries(endpoint.id), 0, -LISTED - 1)
  }
}

/** A new delivery's fields (written with the fan-out's transaction). */
export function newDelivery (
  eventId: string, endpointId: string, type: string, body: string, at: string
): Record<string, string> {
  return { endpoint: endpointId, event_id: eventId, type, body, status: 'pending', attempts: '0', created_at: at }
}

export function deliveryOf (id: string, h: Record<string, string>): Delivery | undefined {
  if (h.endpoint === undefined || h.body === undefined) return undefined
  const num = (v: string | undefined): number | undefined => v === undefined || v === '' ? undefined : Number(v)
  const d: Delivery = {
    id,
    endpoint: h.endpoint,
    event_id: h.event_id ?? '',
    type: h.type ?? '',
    status: (h.status ?? 'pending') as DeliveryStatus,
    attempts: num(h.attempts) ?? 0,
    created_at: h.created_at ?? '',
    body: h.body
  }
  const status = num(h.last_status)
  if (status !== undefined) d.last_status = status
  if (h.last_error !== undefined && h.last_error !== '') d.last_error = h.last_error
  const latency = num(h.latency_ms)
  if (latency !== undefined) d.latency_ms = latency
  if (h.last_attempt_at !== undefined && h.last_attempt_at !== '') d.last_attempt_at = h.last_attempt_at
  if (h.next_attempt_at !== undefined && h.next_attempt_at !== '') d.next_attempt_at = h.next_attempt_at
  return d
}

// KEYS[1]: the due set. ARGV: now, how many, the lease's end.
const CLAIM_LUA = `
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], ARGV[3], id) end
return ids
`

interface ClaimCommand {
  keygateWebhookClaim: (due: string, now: number, count: number, leaseEnd: number) => Promise<string[]>
}

/** The due deliveries (at most `count`), each leased to this instance until `leaseEnd`. */
export async function claimDue (
  redis: RegistryClient, keys: RedisKeys, now: number, count: number, leaseEnd: number
): Promise<string[]> {
  const r = redis as unknown as Partial<ClaimCommand>
  if (r.keygateWebhookClaim === undefined) {
    redis.defineCommand('keygateWebhookClaim', { numberOfKeys: 1, lua: CLAIM_LUA })
  }
  return await (redis as unknown as ClaimCommand).keygateWebhookClaim(keys.webhookDue, now, count, leaseEnd)
}

export async function readDeliveries (
  redis: RegistryClient, keys: RedisKeys, ids: readonly string[]
): Promise<Array<Delivery | undefined>> {
  if (ids.length === 0) return []
  const pipeline = redis.pipeline()
  for (const id of ids) pipeline.hgetall(keys.webhookDelivery(id))
  const replies = await pipeline.exec() ?? []
  return ids.map((id, i) => {
    const [err, h] = replies[i] ?? [null, {}]
    if (err !== null) throw err
    return deliveryOf(id, h as Record<string, string>)
  })
}

/** An attempt's outcome: the receiver's status and latency, or why there was no answer. */
export interface Attempt {
  status?: number
  error?: string
  latencyMs: number
  at: number
}

/**
 * Records an attempt: delivered (2xx), retried at `nextAt`, or failed (`nextAt`
 * undefined); a settled delivery's record expires after `retentionMs`.
 */
export async function settle (
  redis: RegistryClient,
  keys: RedisKeys,
  d: Delivery,
  attempt: Attempt,
  nextAt: number | undefined,
  retentionMs: number
): Promise<DeliveryStatus> {
  const ok = attempt.status !== undefined && attempt.status >= 200 && attempt.status < 300
  const status: DeliveryStatus = ok ? 'delivered' : nextAt === undefined ? 'failed' : 'retrying'
  const key = keys.webhookDelivery(d.id)
  const tx = redis.multi()
  tx.hset(key, {
    status,
    attempts: String(d.attempts + 1),
    last_status: attempt.status === undefined ? '' : String(attempt.status),
    last_error: attempt.error ?? '',
    latency_ms: String(Math.round(attempt.latencyMs)),
    last_attempt_at: new Date(attempt.at).toISOString(),
    next_attempt_at: status === 'retrying' && nextAt !== undefined ? new Date(nextAt).toISOString() : ''
  })
  if (status === 'retrying' && nextAt !== undefined) {
    tx.zadd(keys.webhookDue, nextAt, d.id)
  } else {
    tx.zrem(keys.webhookDue, d.id).pexpire(key, retentionMs)
  }
  const replies = await tx.exec()
  for (const [err] of replies ?? []) if (err !== null) throw err
  return status
}

/** A delivery no longer sendable (its endpoint removed, its record gone): out of the due set, failed. */
export async function drop (
  redis: RegistryClient, keys: RedisKeys, id: string, why: string, retentionMs: number
): Promise<void> {
  const key = keys.webhookDelivery(id)
  const tx = redis.multi().zrem(keys.webhookDue, id)
  tx.hset(key, { status: 'failed', last_error: why, next_attempt_at: '' }).pexpire(key, retentionMs)
  await tx.exec()
}

/** An endpoint's last deliveries, newest first. */
export async function listDeliveries (
  redis: RegistryClient, keys: RedisKeys, endpointId: string, limit: number
): Promise<Delivery[]> {
  const ids = await redis.zrevrange(keys.webhookDeliveries(endpointId), 0, Math.max(0, limit - 1))
  const out = await readDeliveries(redis, keys, ids)
  return out.filter((d): d is Delivery => d !== undefined)
}

/** Sends a delivery again (on request): due now, its attempts and its retry window start over. */
export async function resend (redis: RegistryClient, keys: RedisKeys, id: string, now: number): Promise<boolean> {
  const key = keys.webhookDelivery(id)
  const tx = redis.multi()
  tx.exists(key)
  tx.hset(key, { status: 'pending', attempts: '0', created_at: new Date(now).toISOString(), next_attempt_at: '' })
  tx.persist(key).zadd(keys.webhookDue, now, id)
  const replies = await tx.exec()
  if (replies?.[0]?.[1] === 1) return true
  await redis.multi().del(key).zrem(keys.webhookDue, id).exec()
  return false
}

/** Queues a delivery to one endpoint directly (the test event). */
export async function addDelivery (
  redis: RegistryClient,
  keys: RedisKeys,
  endpointId: string,
  eventId: string,
  type: string,
  body: string,
  now: number
): Promise<string> {
  const id = deliveryId(eventId, endpointId)
  const at = new Date(now).toISOString()
  const tx = redis.multi()
  tx.hset(keys.webhookDelivery(id), newDelivery(eventId, endpointId, type, body, at))
  tx.zadd(keys.webhookDue, now, id).zadd(keys.webhookDeliveries(endpointId), now, id)
  tx.zremrangebyrank(keys.webhookDeliveries(endpointId), 0, -LISTED - 1)
  const replies = await tx.exec()
  for (const [err] of replies ?? []) if (err !== null) throw err
  return id
}
