/**
 * `key.expiring`, found without scanning the keys: key creations add each key with an
 * `expires_at` to a sorted set by that time (`key-expiry`, src/admin/store/keys.ts).
 * Every dispatcher reads the head of it, up to `now + expiring_before`, and claims each
 * key there with one script: ZREM (only one instance's ZREM removes it: the event is
 * queued once per key), then, if the key is still active and not yet expired, the event
 * is queued in the same script (a crash cannot take the key out and lose its event).
 */
import type { RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { derivedEventId } from './audit-events.js'
import { STREAM_MAX } from './events.js'

// KEYS: the index, the key's record, the events stream. ARGV: key id, its expiry (ms), now (ms), event id,
// timestamp, stream length.
const EXPIRING_LUA = `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local r = redis.call('HMGET', KEYS[2], 'status', 'org', 'env', 'expires_at', 'type', 'user', 'name')
if r[1] ~= 'active' or tonumber(ARGV[2]) <= tonumber(ARGV[3]) then return 0 end
local data = {key_id = ARGV[1], expires_at = r[4] or '', env = (r[3] == 'test') and 'test' or 'live'}
if r[2] then data.org = r[2] end
if r[5] then data.key_type = r[5] end
if r[6] then data.user = r[6] end
if r[7] and r[7] ~= '' then data.name = r[7] end
local body = cjson.encode({type = 'key.expiring', timestamp = ARGV[5], data = data})
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[6], '*',
  'id', ARGV[4], 'body', body, 'type', 'key.expiring', 'org', r[2] or '', 'at', ARGV[5])
return 1
`

interface ExpiringCommand {
  keygateWebhookExpiring: (
    index: string, record: string, stream: string, id: string, expiry: number, now: number,
    eventId: string, at: string, max: number
  ) => Promise<number>
}

/** Queues `key.expiring` for the keys whose expiry is within `beforeMs` (at most `count`); how many were queued. */
export async function queueExpiring (
  redis: RegistryClient, keys: RedisKeys, now: number, beforeMs: number, count = 100
): Promise<number> {
  const r = redis as unknown as Partial<ExpiringCommand>
  if (r.keygateWebhookExpiring === undefined) {
    redis.defineCommand('keygateWebhookExpiring', { numberOfKeys: 3, lua: EXPIRING_LUA })
  }
  const head = await redis.zrangebyscore(keys.keyExpiry, '-inf', now + beforeMs, 'WITHSCORES', 'LIMIT', 0, count)
  let queued = 0
  for (let i = 0; i + 1 < head.length; i += 2) {
    const id = head[i] as string
    queued += await (redis as unknown as ExpiringCommand).keygateWebhookExpiring(
      keys.keyExpiry, keys.key(id), keys.webhookEvents, id, Number(head[i + 1]), now,
      derivedEventId('key.expiring', keys.key(id), String(head[i + 1])), new Date(now).toISOString(), STREAM_MAX
    )
  }
  return queued
}
