/**
 * What every store module works with, and how a change is written: one MULTI/EXEC
 * holding the record, its index sets and its audit entry (`commit`), after the records
 * it depends on were read under WATCH on a connection of its own (`watching`).
 */
import type { ChainableCommander } from 'ioredis'
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import { AdminError } from '../model/errors.js'
import type { Snapshot, SnapshotNames } from '../model/snapshot.js'
import type { AuditLog } from './audit-log.js'
import { readSnapshot } from './snapshot.js'
import { writeConnections } from './write-connections.js'
import type { KeyPrefixes } from '../../registry/key-format.js'

/** The store's connection, key names and audit trail (recording `actor`), shared by its modules. */
export interface StoreContext {
  redis: RegistryClient
  keys: RedisKeys
  keyPrefix: KeyPrefixes
  /** who acts: the audit trail's actor, and a new key's creator when none is given */
  actor: string
  audit: AuditLog
}

const CONFLICT = 'the registry changed during this operation; nothing was written, try again'

/**
 * EXEC, checked: `null` (a WATCHed key changed: nothing was written) is a conflict, and
 * a command that failed inside the transaction (say WRONGTYPE on a hand-edited key) is
 * an error, never a silent partial success.
 */
export async function commit (tx: ChainableCommander, conflict = CONFLICT): Promise<void> {
  const replies = await tx.exec()
  if (replies === null) throw new AdminError(conflict, 'conflict')
  for (const [err] of replies) if (err !== null) throw err
}

/**
 * A change's reads and its transaction. Reads go through a connection of its own that
 * WATCHes each record before reading it (write-connections.ts), and `commit` refuses
 * with a conflict when a WATCHed record changed in between, so a concurrent change
 * cannot slip between the check and the write. A change that reads nothing writes
 * through the shared connection.
 */
export class Watch {
  private conn: RegistryClient | undefined
  private watched = false

  constructor (private readonly ctx: StoreContext) {}

  /** The connection of its own, taken on first use. */
  async connection (): Promise<RegistryClient> {
    this.conn ??= await writeConnections(this.ctx.redis).acquire()
    this.watched = true
    return this.conn
  }

  /** Reads the records named, each WATCHed first, into `into` (a new snapshot by default). */
  async read (names: SnapshotNames, into?: Snapshot): Promise<Snapshot> {
    return await readSnapshot(await this.connection(), this.ctx.keys, names, into)
  }

  /** The change's transaction: on the WATCHing connection when anything was read. */
  multi (): ChainableCommander {
    return (this.conn ?? this.ctx.redis).multi()
  }

  /** Commits `tx` (see `commit`); its EXEC clears every WATCH. */
  async commit (tx: ChainableCommander, conflict?: string): Promise<void> {
    this.watched = false
    await commit(tx, conflict)
  }

  /** Forgets every WATCH (a change that writes nothing, before the next one on the same connection). */
  async unwatch (): Promise<void> {
    if (this.conn !== undefined) await this.conn.unwatch()
    this.watched = false
  }

  /** Gives the connection back (`broken`: it failed). */
  close (broken: boolean): void {
    if (this.conn !== undefined) writeConnections(this.ctx.redis).release(this.conn, { watched: this.watched, broken })
    this.conn = undefined
  }
}

/** Runs one change with its Watch, whose connection is given back after. */
export async function watching<T> (ctx: StoreContext, fn: (w: Watch) => Promise<T>): Promise<T> {
  const w = new Watch(ctx)
  let broken = true
  try {
    const result = await fn(w)
    broken = false
    return result
  } catch (err: unknown) {
    // a refusal leaves the connection as it was; anything else may not have
    broken = !(err instanceof AdminError)
    throw err
  } finally {
    w.close(broken)
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
