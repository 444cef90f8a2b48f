/**
 * The index by expiry (`<prefix>key-expiry`, expiring.ts) holds the keys created through
 * keygate since it exists; a key written before, or with redis-cli (a bare HSET), is not
 * in it. Once per deployment the dispatchers add those: a step at a time, off the request
 * path, each step one SCAN call (COUNT keys) over `<prefix>key:*`, their `status` and
 * `expires_at` read in one pipeline, and each active key whose expiry is still ahead
 * added (ZADD NX: a key indexed already keeps its entry). Where the SCAN goes on is kept
 * in `<prefix>key-expiry:backfill` (`<node>:<cursor>`, a Cluster's primaries one after
 * the other), `done` once it is over; each step is one transaction WATCHing it, so of two
 * instances taking the same step one writes, and a stopped instance's successor goes on
 * where it stopped. No `key.expiring` is claimed before it is done (dispatcher.ts), so a
 * key told already is never added back.
 */
import type { Redis } from 'ioredis'
import { parseTimestamp } from '../registry/records.js'
import { primaries, type RegistryClient } from '../registry/redis-client.js'
import { escapeGlob, type RedisKeys } from '../registry/redis-keys.js'

export const BACKFILL_DONE = 'done'

/** One step on `conn` (a connection of the dispatcher's own); true once the backfill is done. */
export async function backfillStep (
  conn: RegistryClient, keys: RedisKeys, count: number, now = Date.now()
): Promise<boolean> {
  await conn.watch(keys.keyExpiryBackfill)
  const at = await conn.get(keys.keyExpiryBackfill)
  if (at === BACKFILL_DONE) {
    await conn.unwatch()
    return true
  }
  const nodes = primaries(conn)
  const [n, cursor] = positionOf(at)
  const node = nodes[n]
  const base = keys.key('')
  let next = BACKFILL_DONE
  let found: Array<[string, number]> = []
  if (node !== undefined) {
    const [after, names] = await node.scan(cursor, 'MATCH', `${escapeGlob(base)}*`, 'COUNT', count)
    next = after !== '0' ? `${n}:${after}` : n + 1 < nodes.length ? `${n + 1}:0` : BACKFILL_DONE
    const ids = names.map((name) => name.slice(base.length)).filter((id) => id !== '' && !id.includes(':'))
    found = await expiries(node, keys, ids, now)
  }
  const tx = conn.multi()
  for (const [id, expiry] of found) tx.zadd(keys.keyExpiry, 'NX', expiry, id)
  tx.set(keys.keyExpiryBackfill, next)
  const replies = await tx.exec()
  // null: another instance took this step first
  for (const [err] of replies ?? []) if (err !== null) throw err
  return replies !== null && next === BACKFILL_DONE
}

/** The active keys among `ids` whose expiry is ahead, with it (ms); a key that is no hash is skipped. */
async function expiries (node: Redis, keys: RedisKeys, ids: string[], now: number): Promise<Array<[string, number]>> {
  if (ids.length === 0) return []
  const pipeline = node.pipeline()
  for (const id of ids) pipeline.hmget(keys.key(id), 'status', 'expires_at')
  const replies = await pipeline.exec() ?? []
  const out: Array<[string, number]> = []
  ids.forEach((id, i) => {
    const [err, fields] = replies[i] ?? [null, null]
    if (err !== null || !Array.isArray(fields)) return
    const [status, expiresAt] = fields as Array<string | null>
    const expiry = parseTimestamp(expiresAt ?? '')
    if (status === 'active' && expiry !== undefined && expiry > now) out.push([id, expiry])
  })
  return out
}

function positionOf (at: string | null): [number, string] {
  const m = /^(\d+):(\d+)$/.exec(at ?? '')
  return m === null ? [0, '0'] : [Number(m[1]), m[2] as string]
}
