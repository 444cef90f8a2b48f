/**
 * The read-through cache over the record store (record-cache.ts): it owns the
 * cache's guarantee. Whether an entry may be served now (`entry`: fresh, stale but
 * servable, or not: must load), and how a miss is filled (`load`): concurrent loads of one id share one read (single
 * flight), each read takes a token of the fill budget first, and what a read brings
 * is installed only if no invalidation raced it.
 *
 * No entry is served as fresh more than `cache.ttl_ms` after Redis last vouched for it:
 *   tracked entries (filled while push invalidation was up, invalidation.ts)
 *               live until invalidated, and are fresh while the invalidation channel
 *               has answered a ping within `cache.ttl_ms` (`verifiedAt`).
 *   other entries (tracking off, or down when they were filled) are fresh for
 *               `cache.ttl_ms` after their fetch (`negative_ttl_ms` for records that
 *               do not exist).
 * When Redis is unreachable, an entry that is no longer fresh may still be served
 * (stale) for at most `cache.stale_if_error_s` after the last moment the cache is
 * known to have agreed with Redis: `verifiedAt` for tracked entries, Redis's last
 * answer for others. Entries already past their TTL at that moment are never
 * served (one may predate a revocation). Past the window, the caller gets 503.
 *
 * Every read takes a token from the process's fill budget (`cache.fills_per_second`,
 * fill-limiter.ts) first; a miss that cannot get one within `cache.fill_wait_ms` is
 * refused (`RegistryBusy`: 503, reason `registry_busy`). The background refill
 * (refill.ts) takes its tokens itself.
 */
import type { RedisHealth } from '../registry/redis-client.js'
import type { FillLimiter } from './fill-limiter.js'
import type { FillTicket, Tracking } from './tracking.js'
import type { Entry } from './entry.js'
import { cacheName, type RecordCache } from './record-cache.js'
import type { CacheTimings } from './timings.js'

export type Kind = keyof typeof cacheName

export class RegistryUnavailable extends Error {
  override readonly name: string = 'RegistryUnavailable'
  constructor (options?: { cause: unknown }) {
    super('registry unavailable', options)
  }
}

/** The fill budget is spent (fill-limiter.ts): refused without a Redis command. */
export class RegistryBusy extends RegistryUnavailable {
  override readonly name = 'RegistryBusy'
}

/** Installs one record a read brought (`name`: cacheName), unless an invalidation raced the read. */
export type Install = (name: string, value: unknown) => void
/** Reads an id's records from Redis, installing each; what it returns is the caller's answer. */
export type Loader<T> = (install: Install) => Promise<T>

export interface ReadThroughOptions {
  records: RecordCache
  /** `false`: nothing is served from the cache nor installed (`cache.enabled: false`, `keygate check`) */
  enabled: boolean
  tracking: Tracking
  /** the budget of registry reads (`cache.fills_per_second`); none: unlimited */
  fills?: FillLimiter | undefined
  health: RedisHealth
  timings: CacheTimings
  now?: () => number
}

export class ReadThroughCache {
  readonly records: RecordCache
  private readonly inflight = new Map<string, Promise<unknown>>()
  private readonly now: () => number

  constructor (private readonly o: ReadThroughOptions) {
    this.records = o.records
    this.now = o.now ?? Date.now
  }

  /**
   * One record's entry if it may be served now: fresh, or, while Redis is known to be down, inside the stale window.
   */
  entry<K extends Kind> (kind: K, id: string, now: number): ReturnType<RecordCache[K]> | undefined {
    if (!this.o.enabled) return undefined
    const e = this.records[kind](id) as ReturnType<RecordCache[K]>
    if (e === undefined || !(this.fresh(e, now) || (!this.o.health.up && this.stale(e, now)))) return undefined
    return e
  }

  /** Reads `id` with `loader` after a token of the fill budget; concurrent loads of the same id share one read. */
  load<T> (id: string, loader: Loader<T>): Promise<T> {
    let pending = this.inflight.get(id) as Promise<T> | undefined
    if (pending === undefined) {
      const turn = this.o.fills?.take()
      pending = turn === undefined ? this.read(id, loader) : this.readAfter(turn, id, loader)
      this.inflight.set(id, pending)
    }
    return pending
  }

  /** A read of `id` is under way. */
  loading (id: string): boolean {
    return this.inflight.has(id)
  }

  /** The background refill's read (refill.ts took the budget): none when `id` is being read already. */
  refill<T> (id: string, loader: Loader<T>): Promise<T> | undefined {
    if (this.inflight.has(id)) return undefined
    const pending = this.read(id, loader)
    this.inflight.set(id, pending)
    return pending
  }

  private fresh (e: Entry<unknown>, now: number): boolean {
    const { tracking, timings } = this.o
    if (e.tracked) return tracking.up && now - tracking.verifiedAt <= timings.ttlMs
    const ttl = e.value === null ? timings.negativeTtlMs : timings.ttlMs
    return now - e.at <= ttl && this.o.health.up
  }

  /** Redis is unreachable: may this entry be served anyway? */
  private stale (e: Entry<unknown>, now: number): boolean {
    const { health, tracking, timings } = this.o
    let agreedAt = tracking.verifiedAt
    if (!e.tracked) {
      agreedAt = health.lastOkAt
      const ttl = e.value === null ? timings.negativeTtlMs : timings.ttlMs
      if (e.at + ttl < agreedAt) return false
    }
    return now - agreedAt < timings.staleIfErrorMs
  }

  private async readAfter<T> (turn: Promise<void>, id: string, loader: Loader<T>): Promise<T> {
    try {
      await turn
    } catch (err: unknown) {
      this.inflight.delete(id)
      throw new RegistryBusy({ cause: err })
    }
    return await this.read(id, loader)
  }

  /** One read; each record it brings is installed unless an invalidation for it raced the read. */
  private read<T> (id: string, loader: Loader<T>): Promise<T> {
    const { tracking } = this.o
    const ticket: FillTicket = tracking.beginFill()
    const at = this.now()
    // (the reply is still the caller's answer: it is what Redis held when read)
    const install: Install = (name, value) => {
      if (this.o.enabled && tracking.mayInstall(ticket, name)) this.records.set(name, value, at, ticket.tracked)
    }
    return loader(install).finally(() => {
      this.inflight.delete(id)
      tracking.endFill(ticket)
    })
  }
}
