/**
 * Push invalidation: Redis tells this process about every write to a registry
 * record, whoever made it (the CLI, the admin API, another gateway, or an admin
 * with redis-cli), so cached records can be served until the moment they change.
 *
 * Mechanism: Redis server-assisted client-side caching in broadcasting mode. One
 * dedicated connection runs
 *   CLIENT TRACKING on REDIRECT <its own id> BCAST
 *     PREFIX <p>key: PREFIX <p>user: PREFIX <p>role: PREFIX <p>org: PREFIX <p>identity:
 *     PREFIX <p>imported:
 *   SUBSCRIBE __redis__:invalidate
 * and from then on receives, on that channel, the name of every key under those
 * prefixes that any client modifies (null for FLUSHDB/FLUSHALL). Index sets, usage,
 * rate-limit buckets and the audit stream have other prefixes, so their writes
 * invalidate nothing.
 *
 * Race safety. Reads go over the main connection, invalidations arrive over this
 * one, so a fill's reply and the invalidation of the record it read may arrive in
 * either order. A fill therefore takes a ticket before it reads (`beginFill`) and
 * may install a record only if no invalidation for that record, no flush and no
 * change of tracking state happened since (`mayInstall`). An invalidation that
 * arrives after the install simply deletes the entry. Either way the older value
 * never stays.
 *
 * Liveness. A silent channel looks the same as a hung server, so the connection
 * is pinged every `verifyEveryMs`. Redis answers on the same connection, after
 * every invalidation it queued before the PING, so when the PONG arrives the cache
 * is known to agree with Redis as of the moment the PING was sent: `verifiedAt`.
 * The resolver serves a tracked entry as fresh only while `verifiedAt` is recent
 * (within `cache.ttl_ms`), and measures the stale window from it.
 *
 * Losing the connection ends the guarantee: `up` turns false at once. A ping that
 * times out only stops `verifiedAt` (entries stop being fresh within a TTL); three
 * in a row give the connection up as hung. When the connection is back, tracking is re-enabled, the cache
 * is flushed, and `up` turns true again; `onEstablished` is then told which key ids
 * the cache held, for the background refill to read again within the fill budget
 * (refill.ts), instead of every one of them missing at once.
 *
 * Listeners (`onChange`) hear of each record dropped, after it was dropped, and of
 * every flush and re-establishment (anything may have changed): open WebSockets are
 * decided again on what they depend on (src/websocket/).
 */
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type { CacheCounters } from './record-cache.js'
import type { ChangeListener, FillTicket, Tracking } from './tracking.js'
import { FillTickets } from './fill-tickets.js'

const CHANNEL = '__redis__:invalidate'
/** pings in a row that time out before the connection is given up as hung */
const MISSED_PINGS = 3

/** `held`: the key ids the cache held before it was flushed; `first`: the first establishment since start */
export type EstablishedListener = (held: string[], first: boolean) => void

export interface TrackerTarget {
  delete: (name: string) => void
  clear: () => void
  /** the key ids of the key records held, and the imported-key lookups' names (record-cache.ts) */
  keyIds: () => string[]
  counters: CacheCounters
}

export interface InvalidationTrackerOptions {
  /**
   * A new connection to the Redis node that holds the registry, made without
   * automatic reconnection: when it ends, the tracker asks for a new one, so a
   * Sentinel or Cluster failover is followed (tracking-connection.ts).
   */
  connect: () => Promise<Redis>
  /** the Redis key prefixes to track, e.g. `keygate:key:` */
  prefixes: string[]
  /** Redis key -> cache name, undefined for keys the cache does not hold */
  nameOf: (redisKey: string) => string | undefined
  cache: TrackerTarget
  /** ping interval; keep it well under `cache.ttl_ms` */
  verifyEveryMs: number
  logger: Logger
  now?: () => number
}

export class InvalidationTracker implements Tracking {
  up = false
  verifiedAt = Number.NEGATIVE_INFINITY
  since = 0
  /** bumped whenever entries filled before may not be installed: loss, re-establishment, flush */
  private epoch = 0
  /** which invalidations each fill in flight may not install over */
  private readonly tickets = new FillTickets()
  private sub: Redis | undefined
  private readonly now: () => number
  private timer: NodeJS.Timeout | undefined
  private pinging = false
  private stopped = false
  private reopenTimer: NodeJS.Timeout | undefined
  private failures = 0
  /** pings in a row that timed out on the current connection */
  private missedPings = 0
  private readonly listeners: ChangeListener[] = []
  private readonly establishedListeners: EstablishedListener[] = []
  private established = 0

  constructor (private readonly o: InvalidationTrackerOptions) {
    this.now = o.now ?? Date.now
  }

  start (): void {
    this.open()
    this.timer = setInterval(() => { this.probe() }, this.o.verifyEveryMs)
    this.timer.unref()
  }

  async stop (): Promise<void> {
    this.stopped = true
    if (this.timer !== undefined) clearInterval(this.timer)
    if (this.reopenTimer !== undefined) clearTimeout(this.reopenTimer)
    this.up = false
    this.sub?.disconnect()
  }

  /** Gives up the current connection (lost, or no longer on the registry's node) and opens another. */
  reconnect (why: string): void {
    this.lose(why)
    const old = this.sub
    this.sub = undefined
    old?.disconnect()
    if (this.stopped || this.reopenTimer !== undefined) return
    // at once the first time, then backing off to 1 s
    const delayMs = this.failures === 0 ? 0 : Math.min(1000, 50 * 2 ** this.failures)
    this.failures++
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = undefined
      this.open()
    }, delayMs)
    this.reopenTimer.unref()
  }

  /** The node the connection is on (host:port), for a Cluster's slot-move check. */
  get node (): string | undefined {
    const o = this.sub?.options
    return o === undefined ? undefined : `${o.host ?? ''}:${o.port ?? ''}`
  }

  private open (): void {
    if (this.stopped) return
    this.o.connect().then((sub) => {
      if (this.stopped) {
        sub.disconnect()
        return
      }
      this.sub = sub
      this.missedPings = 0
      sub.on('ready', () => {
        this.establish(sub).catch((err: unknown) => {
          this.o.logger.error({ err }, 'cache: invalidation setup failed')
        })
      })
      sub.on('error', () => {}) // 'end' follows; the state change happens there
      sub.on('end', () => { if (this.sub === sub) this.reconnect('connection closed') })
      sub.on('messageBuffer', (channel: Buffer, payload: Buffer[] | null) => { this.onMessage(channel, payload) })
    }, (err: unknown) => {
      this.o.logger.warn({ err: { message: (err as Error).message } }, 'cache: no connection for push invalidation yet')
      this.reconnect('connect failed')
    })
  }

  onChange (listener: ChangeListener): void {
    this.listeners.push(listener)
  }

  /**
   * Tracking is established (again): `held` are the key ids the cache held before it
   * was flushed; `first`: the first establishment since start (the refill, refill.ts).
   */
  onEstablished (listener: EstablishedListener): void {
    this.establishedListeners.push(listener)
  }

  private changed (name: string | undefined): void {
    for (const listener of this.listeners) listener(name)
  }

  // ---- fill tickets (resolve-identity.ts) ----------------------------------

  beginFill (): FillTicket {
    return this.tickets.begin(this.up, this.epoch)
  }

  mayInstall (ticket: FillTicket, name: string): boolean {
    return ticket.epoch === this.epoch && this.tickets.unchanged(ticket, name)
  }

  endFill (ticket: FillTicket): void {
    this.tickets.end(ticket)
  }

  /** how many invalidated names are remembered for the fills in flight (fill-tickets.ts) */
  get remembered (): number {
    return this.tickets.remembered
  }

  // ---- the connection ------------------------------------------------------

  private async establish (sub: Redis): Promise<void> {
    let sentAt: number
    try {
      const id = await sub.client('ID')
      sentAt = this.now()
      const prefixes = this.o.prefixes.flatMap((p) => ['PREFIX', p])
      await sub.call('CLIENT', 'TRACKING', 'on', 'REDIRECT', String(id), 'BCAST', ...prefixes)
      await sub.subscribe(CHANNEL)
    } catch (err: unknown) {
      // e.g. an ACL that forbids CLIENT TRACKING: the resolver falls back to its TTL
      this.o.logger.warn(
        { err: { message: (err as Error).message } },
        'cache: push invalidation could not be established; using the TTL'
      )
      this.failures = Math.max(this.failures, 4) // retry about once a second
      if (this.sub === sub) this.reconnect('setup failed')
      return
    }
    if (this.stopped || this.sub !== sub) return
    this.failures = 0
    // Anything cached before now may have missed an invalidation: start clean.
    const held = this.o.cache.keyIds()
    this.epoch++
    this.o.cache.clear()
    this.up = true
    this.since = this.now()
    this.verifiedAt = sentAt
    this.o.logger.info({ prefixes: this.o.prefixes }, 'cache: push invalidation established')
    this.changed(undefined)
    const first = this.established++ === 0
    for (const listener of this.establishedListeners) listener(held, first)
  }

  private lose (why: string): void {
    if (!this.up) return
    this.up = false
    this.since = 0
    this.epoch++
    this.o.logger.warn({ why }, 'cache: push invalidation lost; cached records are now unverified')
  }

  private probe (): void {
    const { sub } = this
    if (!this.up || this.pinging || sub === undefined) return
    this.pinging = true
    const sentAt = this.now()
    const epoch = this.epoch
    sub.ping().then(() => {
      if (this.sub === sub) this.missedPings = 0
      if (this.epoch === epoch && sentAt > this.verifiedAt) this.verifiedAt = sentAt
    }, () => {
      // A late PONG is not a lost invalidation: the connection still delivers them in
      // order, and `verifiedAt` not moving already ends freshness within a TTL. Only a
      // server that stays silent is given up (a busy machine's one slow ping would
      // otherwise flush the cache and refill it, and make it busier).
      if (this.sub === sub && ++this.missedPings >= MISSED_PINGS) this.reconnect('ping failed')
    }).finally(() => { this.pinging = false })
  }

  private onMessage (channel: Buffer, payload: Buffer[] | null): void {
    if (channel.toString() !== CHANNEL) return
    const { cache } = this.o
    if (payload === null) {
      // FLUSHDB / FLUSHALL
      this.epoch++
      cache.clear()
      cache.counters.invalidations++
      this.changed(undefined)
      return
    }
    for (const buf of payload) {
      const name = this.o.nameOf(buf.toString())
      if (name === undefined) continue
      this.tickets.invalidated(name)
      cache.delete(name)
      cache.counters.invalidations++
      this.changed(name)
    }
  }
}
