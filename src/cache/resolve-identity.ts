/**
 * The records stage, the decision's I/O: key record -> user record (personal keys) -> role record, and
 * the key's org record (its rate limit), from the cache when every record there may
 * be served, else in one round trip to Redis that refills them all. Concurrent misses for the same key id share one
 * round trip.
 *
 * No entry is served as fresh more than `cache.ttl_ms` after Redis last vouched for it:
 *   tracked entries (filled while push invalidation was up, src/cache/invalidation.ts)
 *               live until invalidated, and are fresh while the invalidation channel
 *               has answered a ping within `cache.ttl_ms` (`verifiedAt`).
 *   other entries (tracking off, or down when they were filled) are fresh for
 *               `cache.ttl_ms` after their fetch (`negative_ttl_ms` for records that
 *               do not exist).
 * When Redis is unreachable, an entry that is no longer fresh may still be served
 * (stale) for at most `cache.stale_if_error_s` after the last moment the cache is
 * known to have agreed with Redis: `verifiedAt` for tracked entries, Redis's last
 * answer for others. Entries already past their TTL at that moment are never
 * served (one may predate a revocation). Past the window, the request gets 503.
 *
 * Every read of Redis here takes a token from the process's fill budget
 * (`cache.fills_per_second`, fill-limiter.ts) first; a miss that cannot get one within
 * `cache.fill_wait_ms` is refused (`RegistryBusy`: 503, reason `registry_busy`).
 *
 * A miss from a client peer for a key id the cache does not know is charged to
 * that peer's budget of unknown-key lookups (unknown-key-limit.ts), and refunded
 * unless the key came back unknown; a peer with no budget left gets
 * `{ key: null, limited: true }` without a Redis command.
 */
import type { FillLimiter } from './fill-limiter.js'
import type { FillTicket, Tracking } from './invalidation.js'
import { cacheName, type Entry, type RecordCache } from './record-cache.js'
import { registryErrorKind, type RedisHealth } from '../registry/redis-client.js'
import type { RegistryReader } from '../registry/registry-reader.js'
import type { UnknownKeyLimit } from './unknown-key-limit.js'
import { INVALID, type Invalid, type KeyRecord, type OrgRecord, type RoleRecord, type UserRecord } from '../registry/records.js'

/** The records one decision needs; `null` where the record does not exist. */
export interface Resolved {
  key: KeyRecord | Invalid | null
  /** personal keys only */
  user?: UserRecord | Invalid | null
  roleName?: string
  role?: RoleRecord | null
  /** the key's org record (`keygate:org:<org>`); NO_ORG_RECORD when there is none */
  org?: OrgRecord | null
  /** the key was not looked up: the peer's budget of unknown-key lookups is spent */
  limited?: true
}

const LIMITED: Resolved = Object.freeze({ key: null, limited: true })

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

export interface ResolverOptions {
  reader: RegistryReader
  cache: RecordCache
  /** `false`: every decision reads Redis (`cache.enabled: false`) */
  cacheEnabled?: boolean
  tracking: Tracking
  /** the budget of registry reads (`cache.fills_per_second`); none: unlimited */
  fills?: FillLimiter
  health: RedisHealth
  /** told of every failed registry read (metrics) */
  onLookupError?: (err: unknown) => void
  /** the per-peer budget of lookups that come back unknown (`limits.unknown_keys_per_peer`) */
  unknownKeys?: UnknownKeyLimit
  ttlMs: number
  negativeTtlMs: number
  staleIfErrorMs: number
  now?: () => number
}

export class IdentityResolver {
  private readonly inflight = new Map<string, Promise<Resolved>>()
  private readonly now: () => number

  constructor (private readonly o: ResolverOptions) {
    this.now = o.now ?? Date.now
  }

  /**
   * Resolves from the cache synchronously when it can; otherwise one Redis round trip.
   * `peer`: the client's socket address, whose misses are charged to its unknown-key
   * budget (callers without one, such as the admin sign-in, are not limited here).
   */
  resolve (keyId: string, now: number = this.now(), peer?: string): Resolved | Promise<Resolved> {
    const { cache, unknownKeys } = this.o
    // (Redis known to be down: what the stale window allows, without waiting for a timeout)
    const cached = this.fromCache(keyId, now)
    if (cached !== undefined) {
      cache.counters.hits++
      return cached
    }
    // (a key whose record is held but not servable now, e.g. past its freshness while
    // the invalidation channel is slow, or was dropped since, is known to exist: its
    // refetch is not limited)
    if (peer === undefined || unknownKeys === undefined || cache.knownKey(keyId)) {
      cache.counters.misses++
      return this.fetch(keyId)
    }
    const bucket = unknownKeys.take(peer, now)
    if (bucket === undefined) return LIMITED
    cache.counters.misses++
    return this.fetch(keyId).then((records) => {
      if (records.key !== null) unknownKeys.refund(bucket)
      return records
    }, (err: unknown) => {
      unknownKeys.refund(bucket)
      throw err
    })
  }

  private fresh (e: Entry<unknown>, now: number): boolean {
    if (e.tracked) return this.o.tracking.up && now - this.o.tracking.verifiedAt <= this.o.ttlMs
    const ttl = e.value === null ? this.o.negativeTtlMs : this.o.ttlMs
    return now - e.at <= ttl && this.o.health.up
  }

  /** Redis is unreachable: may this entry be served anyway? */
  private stale (e: Entry<unknown>, now: number): boolean {
    const { health, tracking } = this.o
    let agreedAt = tracking.verifiedAt
    if (!e.tracked) {
      agreedAt = health.lastOkAt
      const ttl = e.value === null ? this.o.negativeTtlMs : this.o.ttlMs
      if (e.at + ttl < agreedAt) return false
    }
    return now - agreedAt < this.o.staleIfErrorMs
  }

  /** Fresh; or, while Redis is known to be down, inside the stale window. */
  private servable (e: Entry<unknown> | undefined, now: number): boolean {
    if (e === undefined) return false
    return this.fresh(e, now) || (!this.o.health.up && this.stale(e, now))
  }

  private fromCache (keyId: string, now: number): Resolved | undefined {
    const { cache } = this.o
    if (this.o.cacheEnabled === false) return undefined
    const k = cache.key(keyId)
    if (!this.servable(k, now)) return undefined
    const key = (k as Entry<KeyRecord | Invalid>).value
    if (key === null || key === INVALID) return { key }
    let user: UserRecord | Invalid | null | undefined
    let roleName = key.role as string
    if (key.type === 'personal') {
      const u = cache.user(key.user as string)
      if (!this.servable(u, now)) return undefined
      user = (u as Entry<UserRecord | Invalid>).value
      if (user === null || user === INVALID) return { key, user }
      roleName = user.role
    }
    const r = cache.role(roleName)
    if (!this.servable(r, now)) return undefined
    const o = cache.org(key.org)
    if (!this.servable(o, now)) return undefined
    return { key, user, roleName, role: (r as Entry<RoleRecord>).value, org: (o as Entry<OrgRecord>).value }
  }

  /**
   * Background refill (src/cache/refill.ts): reads a key's records unless they are
   * servable or already being read. The caller has taken the fill budget.
   */
  refill (keyId: string): Promise<Resolved> | undefined {
    if (this.inflight.has(keyId) || this.fromCache(keyId, this.now()) !== undefined) return undefined
    const pending = this.read(keyId)
    this.inflight.set(keyId, pending)
    return pending
  }

  private fetch (keyId: string): Promise<Resolved> {
    let pending = this.inflight.get(keyId)
    if (pending === undefined) {
      const turn = this.o.fills?.take()
      pending = turn === undefined ? this.read(keyId) : this.readAfter(turn, keyId)
      this.inflight.set(keyId, pending)
    }
    return pending
  }

  private async readAfter (turn: Promise<void>, keyId: string): Promise<Resolved> {
    try {
      await turn
    } catch (err: unknown) {
      this.inflight.delete(keyId)
      throw new RegistryBusy({ cause: err })
    }
    return await this.read(keyId)
  }

  /** One round trip; misses of the same key id meanwhile share it (`inflight`). */
  private read (keyId: string): Promise<Resolved> {
    const ticket = this.o.tracking.beginFill()
    return this.fetchOnce(keyId, ticket).finally(() => {
      this.inflight.delete(keyId)
      this.o.tracking.endFill()
    })
  }

  private async fetchOnce (keyId: string, ticket: FillTicket): Promise<Resolved> {
    const { reader, health } = this.o
    const at = this.now()
    let raw
    try {
      raw = await reader.fetchChain(keyId)
    } catch (err: unknown) {
      this.o.onLookupError?.(err)
      // A record of the wrong Redis type is a bad record (deny), not an outage.
      if (registryErrorKind(err) === 'bad_record') return { key: INVALID }
      health.markDown()
      // Redis is down now: inside the stale window, what the cache may still serve is served.
      const stale = this.fromCache(keyId, this.now())
      if (stale !== undefined) return stale
      throw new RegistryUnavailable({ cause: err })
    }
    health.markUp()

    // Each record is installed unless an invalidation for it raced this read
    // (the reply is still this request's answer: it is what Redis held when read).
    const install = (name: string, value: unknown): void => {
      if (this.o.cacheEnabled !== false && this.o.tracking.mayInstall(ticket, name)) this.o.cache.set(name, value, at, ticket.tracked)
    }
    const { key, user, roleName, role, org } = raw
    if (key === null) {
      install(cacheName.key(keyId), null)
      return { key: null }
    }
    install(cacheName.key(keyId), key)
    if (key === INVALID) return { key }
    if (key.type === 'personal') {
      install(cacheName.user(key.user as string), user)
      if (user === null || user === INVALID) return { key, user }
    }
    if (roleName !== '') install(cacheName.role(roleName), role)
    install(cacheName.org(key.org), org)
    return { key, user, roleName, role, org }
  }
}
