/**
 * The connections admin changes read and WATCH on: connections of their own (WATCH
 * belongs to a connection, and the shared one carries other callers' MULTI/EXEC), kept
 * for the next change rather than opened for each, so a change pays no connect (nor, on
 * `rediss://`, a TLS handshake). At most POOL_SIZE are in use at once; a change beyond
 * that waits for one. They close with the shared client they were made from (its `end`;
 * a client that reconnects after an end it did not ask for pools again).
 * A change never holds one while it waits for another.
 */
import { duplicateClient, isCluster, type RegistryClient } from '../../registry/redis-client.js'

const POOL_SIZE = 8
export const WRITE_CONNECTION_NAME = 'keygate-admin-write'

class WriteConnections {
  private readonly idle: RegistryClient[] = []
  private readonly waiting: Array<() => void> = []
  private inUse = 0

  constructor (private readonly shared: RegistryClient) {
    shared.on('end', () => { this.close() })
  }

  /** A connection with no WATCH, for one change; `release` it after. */
  async acquire (): Promise<RegistryClient> {
    while (this.inUse >= POOL_SIZE) await new Promise<void>((resolve) => { this.waiting.push(resolve) })
    this.inUse++
    try {
      for (let conn = this.idle.pop(); conn !== undefined; conn = this.idle.pop()) {
        if (conn.status === 'ready') return conn
        conn.disconnect()
      }
      const options = {
        connectionName: WRITE_CONNECTION_NAME,
        lazyConnect: true,
        enableReadyCheck: false,
        retryStrategy: () => null
      }
      const conn = duplicateClient(this.shared, options)
      conn.on('error', () => {}) // reported through the failed command
      // (connected first: the gateway's clients queue nothing while disconnected)
      await conn.connect()
      return conn
    } catch (err: unknown) {
      this.done()
      throw err
    }
  }

  /** Gives the connection back; `watched`: a WATCH may still be set (no EXEC cleared it). `broken`: close it. */
  release (conn: RegistryClient, o: { watched: boolean, broken: boolean }): void {
    this.done()
    // (a Cluster client sends a keyless UNWATCH to any node, perhaps not the one that holds
    // the WATCH: a connection still watching is closed there rather than reused)
    if (this.shared.status === 'end' || o.broken || (o.watched && isCluster(conn))) {
      conn.disconnect()
      return
    }
    if (o.watched) conn.unwatch().catch(() => {})
    this.idle.push(conn)
  }

  private done (): void {
    this.inUse--
    this.waiting.shift()?.()
  }

  private close (): void {
    for (const conn of this.idle.splice(0)) conn.disconnect()
  }
}

const pools = new WeakMap<RegistryClient, WriteConnections>()

/** The write connections of the shared client `shared`. */
export function writeConnections (shared: RegistryClient): WriteConnections {
  let pool = pools.get(shared)
  if (pool === undefined) {
    pool = new WriteConnections(shared)
    pools.set(shared, pool)
  }
  return pool
}
