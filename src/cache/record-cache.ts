/**
 * The bounded in-process cache of parsed registry records (key, user and role
 * records, each under its own name), and its counters. Records are parsed once, when
 * they enter. Entries carry the time their fetch was issued and whether they were
 * filled under push invalidation (`tracked`); whether an entry may still be served
 * is the resolver's decision (resolve-identity.ts).
 *
 * Names: `k:<keyId>`, `u:<userId>`, `r:<roleName>`; `nameOf` maps a Redis key from
 * an invalidation message to that name.
 */
import { LRUCache } from 'lru-cache'
import type { Invalid, KeyRecord, RoleRecord, UserRecord } from '../registry/records.js'
import type { RedisKeys } from '../registry/redis-keys.js'

/** A record that does not exist in Redis is cached too (negative entry). */
export type Cached<T> = T | null

export interface Entry<T> {
  value: Cached<T>
  /** when the fetch that filled it was issued (epoch ms) */
  at: number
  /** filled while push invalidation was established: valid until invalidated */
  tracked: boolean
}

/** Counters read by the metrics (src/metrics) in collect callbacks: nothing per request but `++`. */
export interface CacheCounters {
  hits: number
  misses: number
  evictions: number
  invalidations: number
}

/** The cache's name of each record. */
export const cacheName = {
  key: (id: string) => 'k:' + id,
  user: (id: string) => 'u:' + id,
  role: (name: string) => 'r:' + name
}

export class RecordCache {
  readonly counters: CacheCounters = { hits: 0, misses: 0, evictions: 0, invalidations: 0 }
  private readonly lru: LRUCache<string, Entry<unknown>>

  constructor (maxEntries: number) {
    this.lru = new LRUCache({
      max: maxEntries,
      dispose: (_value, _name, reason) => { if (reason === 'evict') this.counters.evictions++ }
    })
  }

  get size (): number {
    return this.lru.size
  }

  key (id: string): Entry<KeyRecord | Invalid> | undefined {
    return this.lru.get(cacheName.key(id)) as Entry<KeyRecord | Invalid> | undefined
  }

  user (id: string): Entry<UserRecord | Invalid> | undefined {
    return this.lru.get(cacheName.user(id)) as Entry<UserRecord | Invalid> | undefined
  }

  role (name: string): Entry<RoleRecord> | undefined {
    return this.lru.get(cacheName.role(name)) as Entry<RoleRecord> | undefined
  }

  set (name: string, value: Cached<unknown>, at: number, tracked: boolean): void {
    this.lru.set(name, { value, at, tracked })
  }

  /** Drops one entry by name (an invalidation). */
  delete (name: string): void {
    this.lru.delete(name)
  }

  clear (): void {
    this.lru.clear()
  }
}

/**
 * The cache name for a Redis key of the registry, or undefined for any other key.
 * Built once per prefix; the Redis key names come from redis-keys.ts.
 */
export function cacheNameOf (keys: RedisKeys): (redisKey: string) => string | undefined {
  const kinds: Array<[string, string]> = [[keys.key(''), 'k:'], [keys.user(''), 'u:'], [keys.role(''), 'r:']]
  return (redisKey) => {
    for (const [redisPrefix, short] of kinds) {
      if (redisKey.startsWith(redisPrefix)) return short + redisKey.slice(redisPrefix.length)
    }
    return undefined
  }
}
