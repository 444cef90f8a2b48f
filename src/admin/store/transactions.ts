/**
 * What every store module works with, and how a change is written: one MULTI/EXEC
 * holding the record, its index sets and its audit entry (`commit`), inside `audited`,
 * which counts a refused attempt in the audit trail's refusal aggregates.
 */
import type { ChainableCommander } from 'ioredis'
import { duplicateClient, type RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import type { AuditLog } from './audit-log.js'
import { AdminError } from '../model/errors.js'

/** The store's connection, key names and audit trail, shared by its modules. */
export interface StoreContext {
  redis: RegistryClient
  keys: RedisKeys
  keyPrefix: string
  /** the actor recorded as a key's creator when none is given */
  actor: string
  audit: AuditLog
}

/**
 * EXEC, checked: `null` (a WATCHed key changed: nothing was written) is a conflict, and
 * a command that failed inside the transaction (say WRONGTYPE on a hand-edited key) is
 * an error, never a silent partial success.
 */
export async function commit (tx: ChainableCommander, conflict = 'the registry changed during this operation; nothing was written, try again'): Promise<void> {
  const replies = await tx.exec()
  if (replies === null) throw new AdminError(conflict, 'conflict')
  for (const [err] of replies) if (err !== null) throw err
}

/**
 * Runs `fn` on a connection of its own that WATCHes `keys`, for a change that depends
 * on what it reads (a key's owner, a user's org, role and status): `fn` reads through
 * `conn` and writes with `conn.multi()`, and `commit` refuses with a conflict when a
 * WATCHed record changed in between, so a concurrent change cannot slip between the
 * check and the write. WATCH belongs to a connection, and the shared one carries other
 * callers' MULTI/EXEC (an EXEC clears every WATCH, and would itself be aborted by ours),
 * hence the connection of its own. `fn` may WATCH more keys before reading them.
 */
export async function watching<T> (ctx: StoreContext, name: string, keys: string[], fn: (conn: RegistryClient) => Promise<T>): Promise<T> {
  const conn = duplicateClient(ctx.redis, { connectionName: `keygate-${name}`, lazyConnect: true, enableReadyCheck: false, retryStrategy: () => null })
  conn.on('error', () => {}) // reported through the failed command
  try {
    // (connected first: the gateway's clients queue nothing while disconnected)
    await conn.connect()
    if (keys.length > 0) await conn.watch(...keys)
    return await fn(conn)
  } finally {
    conn.disconnect()
  }
}

/** Runs one admin operation; a refused one is counted in the refusal aggregates with its message, then rethrown. */
export async function audited<T> (ctx: StoreContext, action: string, target: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err: unknown) {
    if (err instanceof AdminError) {
      await ctx.audit.refused(action, target, `error: ${err.message}`).catch(() => {})
    }
    throw err
  }
}

/** HGETALL of several keys in one round trip; a missing key is `{}`. */
export async function hgetallMany (redis: RegistryClient, keys: string[]): Promise<Array<Record<string, string>>> {
  if (keys.length === 0) return []
  const pipeline = redis.pipeline()
  for (const k of keys) pipeline.hgetall(k)
  const replies = await pipeline.exec() ?? []
  return replies.map(([, value]) => (value ?? {}) as Record<string, string>)
}
