/**
 * The events webhooks carry (docs/webhooks.md), and the events stream
 * (`webhook-events`) the events that are no admin change are queued in: `key.expiring`
 * and `quota.threshold`, each by the one instance that won its claim in Redis, in the
 * claim's own script; the dispatcher of one instance fans each out to the endpoints
 * that asked for it (dispatcher.ts). An admin change's events are its audit entry
 * (audit-events.ts), written with the change.
 *
 * A payload carries ids, names and times, never a key, a secret or a hash.
 */
import { randomBytes } from 'node:crypto'
import type { RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'

export const EVENT_TYPES = [
  'key.created',
  'key.rotated',
  'key.revoked',
  'key.leaked',
  'key.expiring',
  'user.deactivated',
  'quota.threshold',
  'registry.applied'
] as const

export type EventType = typeof EVENT_TYPES[number]

/** `webhook.test`: sent to one endpoint on request (`keygate webhooks test`), never subscribed to */
export const TEST_EVENT = 'webhook.test'

/** One event, as its deliveries' body holds it (`{type, timestamp, data}`) and with its id (`webhook-id`). */
export interface WebhookEvent {
  id: string
  type: string
  /** ISO 8601 */
  timestamp: string
  data: Record<string, unknown>
  /** the org it concerns: an org's endpoints get only their org's events; undefined: admins' endpoints only */
  org: string | undefined
}

/** the events stream keeps about this many entries (an entry is fanned out within a poll or two) */
export const STREAM_MAX = 100_000

export function eventId (): string {
  return `msg_${randomBytes(16).toString('base64url')}`
}

/** The delivery body: exactly `{type, timestamp, data}`. */
export function eventBody (e: Pick<WebhookEvent, 'type' | 'timestamp' | 'data'>): string {
  return JSON.stringify({ type: e.type, timestamp: e.timestamp, data: e.data })
}

/** the stream entry's fields */
export function streamFields (e: WebhookEvent): string[] {
  return ['id', e.id, 'body', eventBody(e), 'type', e.type, 'org', e.org ?? '', 'at', e.timestamp]
}

// KEYS: the guard, the stream. ARGV: guard's lifetime (ms), max length, then the entry's fields.
const ONCE_LUA = `
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then
  local fields = {}
  for i = 3, #ARGV do fields[#fields + 1] = ARGV[i] end
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', unpack(fields))
  return 1
end
return 0
`

interface OnceCommand {
  keygateWebhookOnce: (
    guard: string, stream: string, ttlMs: number, max: number, ...fields: string[]
  ) => Promise<number>
}

/**
 * Queues an event once for `guard` (a name held `ttlMs`): of every instance that tries,
 * one queues it (atomically with the guard: a crash cannot take the guard and lose the event).
 */
export async function queueEventOnce (
  redis: RegistryClient, keys: RedisKeys, guard: string, ttlMs: number, e: WebhookEvent
): Promise<boolean> {
  const r = redis as unknown as Partial<OnceCommand> & RegistryClient
  if (r.keygateWebhookOnce === undefined) redis.defineCommand('keygateWebhookOnce', { numberOfKeys: 2, lua: ONCE_LUA })
  const queued = await (redis as unknown as OnceCommand).keygateWebhookOnce(
    guard, keys.webhookEvents, Math.max(1, Math.round(ttlMs)), STREAM_MAX, ...streamFields(e)
  )
  return queued === 1
}
