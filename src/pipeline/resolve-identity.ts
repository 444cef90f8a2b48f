/**
 * Stages 4-6, the I/O: key record -> user record (personal keys) -> role record,
 * from the cache when every record there may be served, else in one round trip to
 * Redis that refills all three. Concurrent misses for the same key id share one
 * round trip.
 *
 * When an entry may be served:
 *   Redis up:   while younger than the TTL (`cache.ttl_ms`; `negative_ttl_ms` for
 *               records that do not exist).
 *   Redis down: entries that were still fresh when Redis last answered, for at most
 *               `cache.stale_if_error_s` after that answer; then nothing, and the
 *               request gets 503.
 */
import type { Entry, RecordCache } from '../cache/record-cache.js'
import type { RedisHealth } from '../registry/redis-client.js'
import type { RegistryReader } from '../registry/registry-reader.js'
import {
  fieldsOf, INVALID, parseKeyRecord, parseRoleRecord, parseUserRecord,
  type Invalid, type KeyRecord, type RoleRecord, type UserRecord
} from '../registry/records.js'

/** The records one decision needs; `null` where the record does not exist. */
export interface Resolved {
  key: KeyRecord | Invalid | null
  /** personal keys only */
  user?: UserRecord | Invalid | null
  roleName?: string
  role?: RoleRecord | null
}

export class RegistryUnavailable extends Error {
  override readonly name = 'RegistryUnavailable'
  constructor (options?: { cause: unknown }) {
    super('registry unavailable', options)
  }
}

export interface ResolverOptions {
  reader: RegistryReader
  cache: RecordCache
  health: RedisHealth
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

  /** Resolves from the cache synchronously when it can; otherwise one Redis round trip. */
  resolve (keyId: string, now: number = this.now()): Resolved | Promise<Resolved> {
    return this.fromCache(keyId, now) ?? this.fetch(keyId)
  }

  private servable (e: Entry<unknown> | undefined, now: number): boolean {
    if (e === undefined) return false
    const { health } = this.o
    const ttl = e.value === null ? this.o.negativeTtlMs : this.o.ttlMs
    if (health.up) return now - e.at <= ttl
    // Stale service: only entries that were still fresh when Redis last answered (an older
    // one may predate a revocation), for at most the window after that (0 = never).
    return e.at + ttl >= health.lastOkAt && now - health.lastOkAt < this.o.staleIfErrorMs
  }

  private fromCache (keyId: string, now: number): Resolved | undefined {
    const { cache } = this.o
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
    return { key, user, roleName, role: (r as Entry<RoleRecord>).value }
  }

  private fetch (keyId: string): Promise<Resolved> {
    let pending = this.inflight.get(keyId)
    if (pending === undefined) {
      pending = this.fetchOnce(keyId).finally(() => this.inflight.delete(keyId))
      this.inflight.set(keyId, pending)
    }
    return pending
  }

  private async fetchOnce (keyId: string): Promise<Resolved> {
    const { reader, cache, health } = this.o
    const at = this.now()
    let raw
    try {
      raw = await reader.fetchChain(keyId)
    } catch (err: unknown) {
      // A record of the wrong Redis type is a bad record (deny), not an outage.
      if (isWrongType(err)) return { key: INVALID }
      health.markDown()
      // Redis is down now: inside the stale window, what the cache may still serve is served.
      const stale = this.fromCache(keyId, this.now())
      if (stale !== undefined) return stale
      throw new RegistryUnavailable({ cause: err })
    }
    health.markUp()

    if (raw.key.length === 0) {
      cache.setKey(keyId, null, at)
      return { key: null }
    }
    const key = parseKeyRecord(fieldsOf(raw.key))
    cache.setKey(keyId, key, at)
    if (key === INVALID) return { key }
    let user: UserRecord | Invalid | null | undefined
    if (key.type === 'personal') {
      user = raw.user.length === 0 ? null : parseUserRecord(fieldsOf(raw.user))
      cache.setUser(key.user as string, user, at)
      if (user === null || user === INVALID) return { key, user }
    }
    const roleName = raw.roleName
    const role = raw.role.length === 0 ? null : parseRoleRecord(fieldsOf(raw.role))
    if (roleName !== '') cache.setRole(roleName, role, at)
    return { key, user, roleName, role }
  }
}

/** Redis answered, but a record is not a hash (e.g. written with SET): `WRONGTYPE`, also inside a script error. */
function isWrongType (err: unknown): boolean {
  return err instanceof Error && err.name === 'ReplyError' && err.message.includes('WRONGTYPE')
}
