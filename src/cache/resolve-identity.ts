/**
 * The records stage: key record -> user record (personal keys) -> role record, and
 * the key's org record (its rate limit) and identity record (a BOT key that names
 * one), from the read-through cache when every record
 * there may be served (read-through.ts decides), else in one round trip to Redis that
 * brings them all, as one load of the key id.
 *
 * A miss from a client peer for a key id the cache does not know is charged to
 * that peer's budget of unknown-key lookups (unknown-key-limit.ts), and refunded
 * unless the key came back unknown; a peer with no budget left gets
 * `{ key: null, limited: true }` without a Redis command.
 */
import type { RedisHealth } from '../registry/redis-client.js'
import { registryErrorKind } from '../registry/redis-replies.js'
import type { Chain, RegistryReader } from '../registry/registry-reader.js'
import { INVALID, type Invalid, type UserRecord } from '../registry/records.js'
import { RegistryUnavailable, type Install, type Loader, type ReadThroughCache } from './read-through.js'
import { cacheName } from './record-cache.js'
import type { UnknownKeyLimit } from './unknown-key-limit.js'
import type { Resolved, ResolvedImport, ResolvedUser } from './resolved.js'

export type { Resolved, ResolvedImport, ResolvedUser } from './resolved.js'

const LIMITED: Resolved = Object.freeze({ key: null, limited: true })
/** the start of an imported-key lookup's cache name (a key id never has a `:`) */
const IMPORTED_NAME = cacheName.imported('')

const UNKNOWN_IMPORT: ResolvedImport = Object.freeze({ keyId: null, records: Object.freeze({ key: null }) })
const LIMITED_IMPORT: ResolvedImport = Object.freeze({ keyId: null, records: LIMITED })

export interface ResolverOptions {
  cache: ReadThroughCache
  reader: RegistryReader
  health: RedisHealth
  /** told of every failed registry read (metrics) */
  onLookupError?: ((err: unknown) => void) | undefined
  /** the per-peer budget of lookups that come back unknown (`limits.unknown_keys_per_peer`) */
  unknownKeys?: UnknownKeyLimit | undefined
  now?: () => number
}

export class IdentityResolver {
  private readonly now: () => number

  constructor (private readonly o: ResolverOptions) {
    this.now = o.now ?? Date.now
  }

  /**
   * Resolves from the cache synchronously when it can; otherwise one Redis round trip.
   * `peer`: the client's address (the TCP peer, or the client a trusted proxy reports),
   * whose misses are charged to its unknown-key budget (callers without one, such as the admin sign-in, are not
   * limited here).
   */
  resolve (keyId: string, now: number = this.now(), peer?: string): Resolved | Promise<Resolved> {
    const { cache, unknownKeys } = this.o
    const { counters } = cache.records
    // (Redis known to be down: what the stale window allows, without waiting for a timeout)
    const cached = this.fromCache(keyId, now)
    if (cached !== undefined) {
      counters.hits++
      return cached
    }
    // (a key whose record is held but not servable now, e.g. past its freshness while
    // the invalidation channel is slow, or was dropped since, is known to exist: its
    // refetch is not limited)
    if (peer === undefined || unknownKeys === undefined || cache.records.knownKey(keyId)) {
      counters.misses++
      return cache.load(keyId, this.loader(keyId))
    }
    const bucket = unknownKeys.take(peer, now)
    if (bucket === undefined) return LIMITED
    counters.misses++
    return cache.load(keyId, this.loader(keyId)).then((records) => {
      if (records.key !== null) unknownKeys.refund(bucket)
      return records
    }, (err: unknown) => {
      unknownKeys.refund(bucket)
      throw err
    })
  }

  /**
   * An imported key (docs/imports.md), by the SHA-256 (hex) of the whole token, from the
   * cache exactly as a native key: its lookup (`i:<sha256>` -> key id, or unknown) is a
   * cached record of its own, invalidated by push like the others, and the key's
   * records are the key id's. A token whose lookup is not cached costs one round trip
   * (the lookup and the chain in one script), from a client peer charged to its
   * unknown-key budget and refunded when the token is a key; a token whose lookup is
   * cached but whose key records are not is read as its key id (`resolve`).
   */
  resolveImported (
    tokenSha256: string, now: number = this.now(), peer?: string
  ): ResolvedImport | Promise<ResolvedImport> {
    const { cache, unknownKeys } = this.o
    const { counters } = cache.records
    const lookup = cache.entry('imported', tokenSha256, now)
    if (lookup !== undefined) {
      const keyId = lookup.value
      if (keyId === null) {
        counters.hits++
        return UNKNOWN_IMPORT
      }
      const records = this.resolve(keyId, now, peer)
      return records instanceof Promise ? records.then((r) => ({ keyId, records: r })) : { keyId, records }
    }
    const load = (): Promise<ResolvedImport> => {
      counters.misses++
      return cache.load(
        cacheName.imported(tokenSha256), async (install) => await this.readImported(tokenSha256, install)
      )
    }
    // (a lookup held but not servable now, or dropped since, names a key known to exist: not limited)
    if (peer === undefined || unknownKeys === undefined || cache.records.knownImport(tokenSha256)) return load()
    const bucket = unknownKeys.take(peer, now)
    if (bucket === undefined) return LIMITED_IMPORT
    return load().then((found) => {
      if (found.keyId !== null) unknownKeys.refund(bucket)
      return found
    }, (err: unknown) => {
      unknownKeys.refund(bucket)
      throw err
    })
  }

  /** The cached lookup and chain of an imported key, while Redis is unreachable (stale window). */
  private importedFromCache (tokenSha256: string, now: number): ResolvedImport | undefined {
    const lookup = this.o.cache.entry('imported', tokenSha256, now)
    if (lookup === undefined) return undefined
    const keyId = lookup.value
    if (keyId === null) return UNKNOWN_IMPORT
    const records = this.fromCache(keyId, now)
    return records === undefined ? undefined : { keyId, records }
  }

  /** An imported key's one round trip: its lookup and chain, installed as a native key's. */
  private async readImported (tokenSha256: string, install: Install): Promise<ResolvedImport> {
    const { reader, health } = this.o
    let read
    try {
      read = await reader.fetchImported(tokenSha256)
    } catch (err: unknown) {
      this.o.onLookupError?.(err)
      if (registryErrorKind(err) === 'bad_record') return { keyId: null, records: { key: INVALID } }
      health.markDown()
      const stale = this.importedFromCache(tokenSha256, this.now())
      if (stale !== undefined) return stale
      throw new RegistryUnavailable({ cause: err })
    }
    health.markUp()
    const { keyId, chain } = read
    install(cacheName.imported(tokenSha256), keyId)
    if (keyId === null) return UNKNOWN_IMPORT
    return { keyId, records: this.installChain(keyId, chain, install) }
  }

  /**
   * A user and its role, as a key's chain reads them, from the same cache (and so the
   * same push invalidation): a session's sign-in (src/admin/sso/) sees a deactivation,
   * a move to another org or a changed role exactly when a personal key of that user would.
   */
  resolveUser (userId: string, now: number = this.now()): ResolvedUser | Promise<ResolvedUser> {
    const { cache } = this.o
    const cached = this.userFromCache(userId, now)
    if (cached !== undefined) {
      cache.records.counters.hits++
      return cached
    }
    cache.records.counters.misses++
    // (the load's id is the cache name: it can never be a key id, which has no `:`)
    return cache.load(cacheName.user(userId), async (install) => await this.readUser(userId, install))
  }

  private userFromCache (userId: string, now: number): ResolvedUser | undefined {
    const { cache } = this.o
    const u = cache.entry('user', userId, now)
    if (u === undefined) return undefined
    const user = u.value
    if (user === null || user === INVALID) return { user, role: null }
    const r = cache.entry('role', user.role, now)
    if (r === undefined) return undefined
    return { user, role: r.value }
  }

  private async readUser (userId: string, install: Install): Promise<ResolvedUser> {
    const { reader, health } = this.o
    let raw
    try {
      raw = await reader.fetchUser(userId)
    } catch (err: unknown) {
      this.o.onLookupError?.(err)
      if (registryErrorKind(err) === 'bad_record') return { user: INVALID, role: null }
      health.markDown()
      const stale = this.userFromCache(userId, this.now())
      if (stale !== undefined) return stale
      throw new RegistryUnavailable({ cause: err })
    }
    health.markUp()
    install(cacheName.user(userId), raw.user)
    if (raw.user !== null && raw.user !== INVALID && raw.user.role !== '') {
      install(cacheName.role(raw.user.role), raw.role)
    }
    return raw
  }

  /**
   * Background refill (refill.ts): reads a key's records, or an imported key's lookup
   * and records (`id` its cache name, `i:<sha256>`), unless they are servable or already
   * being read. The caller has taken the fill budget.
   */
  refill (id: string): Promise<unknown> | undefined {
    const { cache } = this.o
    if (cache.loading(id)) return undefined
    if (id.startsWith(IMPORTED_NAME)) {
      const sha = id.slice(IMPORTED_NAME.length)
      if (this.importedFromCache(sha, this.now()) !== undefined) return undefined
      return cache.refill(id, async (install) => await this.readImported(sha, install))
    }
    if (this.fromCache(id, this.now()) !== undefined) return undefined
    return cache.refill(id, this.loader(id))
  }

  /** The chain, from the cache: undefined unless every record of it may be served. */
  private fromCache (keyId: string, now: number): Resolved | undefined {
    const { cache } = this.o
    const k = cache.entry('key', keyId, now)
    if (k === undefined) return undefined
    const key = k.value
    if (key === null || key === INVALID) return { key }
    let user: UserRecord | Invalid | null | undefined
    let roleName = key.role as string
    if (key.type === 'personal') {
      const u = cache.entry('user', key.user as string, now)
      if (u === undefined) return undefined
      user = u.value
      if (user === null || user === INVALID) return { key, user }
      roleName = user.role
    }
    const r = cache.entry('role', roleName, now)
    if (r === undefined) return undefined
    const o = cache.entry('org', key.org, now)
    if (o === undefined) return undefined
    if (key.identity === undefined) return { key, user, roleName, role: r.value, org: o.value }
    const d = cache.entry('identity', key.identity, now)
    if (d === undefined) return undefined
    return { key, user, roleName, role: r.value, org: o.value, identity: d.value }
  }

  /** The one round trip for a key id, as a load of the read-through cache. */
  private loader (keyId: string): Loader<Resolved> {
    return async (install) => await this.readChain(keyId, install)
  }

  private async readChain (keyId: string, install: Install): Promise<Resolved> {
    const { reader, health } = this.o
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
    return this.installChain(keyId, raw, install)
  }

  /** A key's chain as one read brought it: each record installed, the decision's records returned. */
  private installChain (keyId: string, raw: Chain, install: Install): Resolved {
    const { key, user, roleName, role, org, identity } = raw
    install(cacheName.key(keyId), key)
    if (key === null) return { key: null }
    if (key === INVALID) return { key }
    if (key.type === 'personal') {
      install(cacheName.user(key.user as string), user)
      if (user === null || user === INVALID) return { key, user }
    }
    if (roleName !== '') install(cacheName.role(roleName), role)
    install(cacheName.org(key.org), org)
    if (key.identity === undefined) return { key, user, roleName, role, org }
    install(cacheName.identity(key.identity), identity ?? null)
    return { key, user, roleName, role, org, identity: identity ?? null }
  }
}
