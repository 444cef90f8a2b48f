/**
 * Push invalidation: Redis tells this process about every write to a registry
 * record, whoever made it (the CLI, the admin API, another gateway, or an admin
 * with redis-cli), so cached records can be served until the moment they change.
 *
 * Mechanism: Redis server-assisted client-side caching in broadcasting mode. One
 * dedicated connection runs
 *   CLIENT TRACKING on REDIRECT <its own id> BCAST PREFIX <p>key: PREFIX <p>user: PREFIX <p>role:
 *   SUBSCRIBE __redis__:invalidate
 * and from then on receives, on that channel, the name of every key under those
 * prefixes that any client modifies (null for FLUSHDB/FLUSHALL). Index sets, usage
 * and the audit stream have other prefixes, so their writes invalidate nothing.
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
 * Losing the connection (or a ping timing out) ends the guarantee: `up` turns
 * false at once. When the connection is back, tracking is re-enabled, the cache
 * is flushed, and `up` turns true again.
 */
import type { Redis } from 'ioredis'
import type { Logger } from 'pino'
import type { CacheCounters } from './record-cache.js'

const CHANNEL = '__redis__:invalidate'

/** What the resolver needs to know about tracking, and the fill tickets. */
export interface Tracking {
  /** the channel is established (tracked entries may be fresh) */
  readonly up: boolean
  /** the cache agrees with Redis as of this moment (epoch ms): the last answered ping */
  readonly verifiedAt: number
  /** when tracking was last established (epoch ms); 0 while down */
  readonly since: number
  beginFill: () => FillTicket
  mayInstall: (ticket: FillTicket, name: string) => boolean
  endFill: () => void
}

export interface FillTicket {
  /** the fill started while tracking was up: what it installs is tracked */
  tracked: boolean
  epoch: number
  seq: number
}

export interface TrackerTarget {
  delete: (name: string) => void
  clear: () => void
  counters: CacheCounters
}

export interface InvalidationTrackerOptions {
  /** a new connection to the Redis that holds the registry (not yet connected is fine) */
  connect: () => Redis
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
  /** bumped by every invalidated name */
  private seq = 0
  private fills = 0
  /** name -> seq of its latest invalidation, kept only while fills are in flight */
  private readonly recent = new Map<string, number>()
  private readonly sub: Redis
  private readonly now: () => number
  private timer: NodeJS.Timeout | undefined
  private pinging = false
  private stopped = false

  constructor (private readonly o: InvalidationTrackerOptions) {
    this.now = o.now ?? Date.now
    this.sub = o.connect()
    this.sub.on('ready', () => { this.establish().catch((err: unknown) => { o.logger.error({ err }, 'cache: invalidation setup failed') }) })
    this.sub.on('close', () => { this.lose('connection closed') })
    this.sub.on('error', () => { this.lose('connection error') })
    this.sub.on('messageBuffer', (channel: Buffer, payload: Buffer[] | null) => { this.onMessage(channel, payload) })
  }

  start (): void {
    this.timer = setInterval(() => { this.probe() }, this.o.verifyEveryMs)
    this.timer.unref()
  }

  async stop (): Promise<void> {
    this.stopped = true
    if (this.timer !== undefined) clearInterval(this.timer)
    this.up = false
    this.sub.disconnect()
  }

  // ---- fill tickets (resolve-identity.ts) ----------------------------------

  beginFill (): FillTicket {
    this.fills++
    return { tracked: this.up, epoch: this.epoch, seq: this.seq }
  }

  mayInstall (ticket: FillTicket, name: string): boolean {
    if (ticket.epoch !== this.epoch) return false
    const invalidated = this.recent.get(name)
    return invalidated === undefined || invalidated <= ticket.seq
  }

  endFill (): void {
    this.fills--
    if (this.fills === 0) this.recent.clear()
  }

  // ---- the connection ------------------------------------------------------

  private async establish (): Promise<void> {
    const { sub } = this
    let sentAt: number
    try {
      const id = await sub.client('ID')
      sentAt = this.now()
      const prefixes = this.o.prefixes.flatMap((p) => ['PREFIX', p])
      await sub.call('CLIENT', 'TRACKING', 'on', 'REDIRECT', String(id), 'BCAST', ...prefixes)
      await sub.subscribe(CHANNEL)
    } catch (err: unknown) {
      // e.g. an ACL that forbids CLIENT TRACKING: the resolver falls back to its TTL
      this.o.logger.warn({ err: { message: (err as Error).message } }, 'cache: push invalidation could not be established; using the TTL')
      this.lose('setup failed')
      if (!this.stopped) setTimeout(() => { if (sub.status === 'ready') sub.disconnect(true) }, 1000).unref()
      return
    }
    if (this.stopped) return
    // Anything cached before now may have missed an invalidation: start clean.
    this.epoch++
    this.o.cache.clear()
    this.up = true
    this.since = this.now()
    this.verifiedAt = sentAt
    this.o.logger.info({ prefixes: this.o.prefixes }, 'cache: push invalidation established')
  }

  private lose (why: string): void {
    if (!this.up) return
    this.up = false
    this.since = 0
    this.epoch++
    this.o.logger.warn({ why }, 'cache: push invalidation lost; cached records are now unverified')
  }

  private probe (): void {
    if (!this.up || this.pinging) return
    this.pinging = true
    const sentAt = this.now()
    const epoch = this.epoch
    this.sub.ping().then(() => {
      if (this.epoch === epoch && sentAt > this.verifiedAt) this.verifiedAt = sentAt
    }, () => {
      // a hung server: give up this connection; ioredis reconnects and we re-establish
      this.lose('ping failed')
      this.sub.disconnect(true)
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
      return
    }
    for (const buf of payload) {
      const name = this.o.nameOf(buf.toString())
      if (name === undefined) continue
      this.seq++
      if (this.fills > 0) this.recent.set(name, this.seq)
      cache.delete(name)
      cache.counters.invalidations++
    }
  }
}

/** No push invalidation (`cache.tracking: false`): every entry lives by its TTL. */
export const NO_TRACKING: Tracking = {
  up: false,
  verifiedAt: Number.NEGATIVE_INFINITY,
  since: 0,
  beginFill: () => ({ tracked: false, epoch: 0, seq: 0 }),
  mayInstall: () => true,
  endFill: () => {}
}
