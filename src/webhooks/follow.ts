/**
 * The admin events' way out: the dispatcher follows the audit trail (`<prefix>audit`,
 * written in each change's own MULTI/EXEC) from a cursor (`<prefix>webhook-cursor`, the
 * id of the last entry fanned out). A step reads the entries after the cursor, writes a
 * delivery of each of their events (audit-events.ts) for each endpoint that wants it,
 * and moves the cursor, in one transaction WATCHing the cursor: of two instances that
 * read the same entries, one writes and the other's EXEC is refused, so every entry is
 * fanned out once, whatever the number of instances, and none is lost to a crash (the
 * cursor moves only with the deliveries written).
 *
 * The cursor starts where the first endpoint is added (`startCursor`, in the endpoint's
 * own transaction, before its audit entry): an endpoint gets the events of the changes
 * after it, never the backlog of a time without endpoints.
 */
import type { ChainableCommander } from 'ioredis'
import type { RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { eventsOfEntry } from './audit-events.js'
import { writeDeliveries } from './deliveries.js'
import type { Endpoint } from './endpoints.js'
import { eventBody } from './events.js'

// KEYS: the cursor, the endpoints' set, the audit stream. With no endpoint yet, or no cursor: the trail's last id.
const START_LUA = `
if redis.call('SCARD', KEYS[2]) > 0 and redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local last = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
redis.call('SET', KEYS[1], last[1] and last[1][1] or '0-0')
return 1
`

/** Into an endpoint's transaction, before its SADD: the cursor at the trail's end when it is the first endpoint. */
export function startCursor (tx: ChainableCommander, keys: RedisKeys): void {
  tx.eval(START_LUA, 3, keys.webhookCursor, keys.webhooks, keys.audit)
}

/**
 * One step on `conn` (a connection of the dispatcher's own: WATCH is a connection's);
 * true when more entries may be waiting.
 */
export async function followAudit (
  conn: RegistryClient, keys: RedisKeys, endpoints: readonly Endpoint[], count: number, now = Date.now()
): Promise<boolean> {
  await conn.watch(keys.webhookCursor)
  const cursor = await conn.get(keys.webhookCursor)
  if (cursor === null) {
    // endpoints added before the cursor existed: their events from now on (the start's own script)
    await conn.unwatch()
    await conn.eval(START_LUA, 3, keys.webhookCursor, keys.webhooks, keys.audit)
    return true
  }
  const rows = await conn.xrange(keys.audit, `(${cursor}`, '+', 'COUNT', count)
  const lastRow = rows[rows.length - 1]
  if (lastRow === undefined) {
    await conn.unwatch()
    return false
  }
  const tx = conn.multi()
  for (const [id, flat] of rows) {
    for (const e of eventsOfEntry(keys.audit, id, flat)) {
      writeDeliveries(tx, keys, endpoints, { ...e, body: eventBody(e) }, now)
    }
  }
  tx.set(keys.webhookCursor, lastRow[0])
  const replies = await tx.exec()
  // null: another instance moved the cursor first (it wrote these entries' deliveries)
  if (replies === null) return true
  for (const [err] of replies) if (err !== null) throw err
  return rows.length >= count
}
