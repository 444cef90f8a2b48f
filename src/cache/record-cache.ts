/**
 * The bounded in-process cache of parsed registry records (key, user, role and org
 * records, each under its own name), and its counters. Records are parsed once, when
 * they enter. Entries carry the time their fetch was issued and whether they were
 * filled under push invalidation (`tracked`); whether an entry may still be served
 * is the resolver's decision (resolve-identity.ts).
 *
 * Names: `k:<keyId>`, `u:<userId>`, `r:<roleName>`, `o:<org>`, `d:<identity id>`, and `i:<sha256 hex>` for an
 * imported key's lookup (docs/imports.md: the SHA-256 of the whole token -> its key id);
 * `nameOf` maps a Redis key from an invalidation message to that name. Each kind has its
 * own store, keyed by the bare id, so a lookup on the request path builds no string:
 * users, roles, orgs and imported-key lookups as entry objects in a Map, keys column by
 * column in a KeyTable (key-table.ts), since they are most of the cache's memory. An
 * imported key's lookup is keyed by the token's SHA-256, never by the token: the
 * process holds no imported key in the clear, and every entry is 64 characters.
 *
 * The bound (`cache.max_entries`, over the records of all five kinds) is kept by
 * CLOCK, the second-chance approximation of LRU: a hit only marks its entry used; when
 * an entry must go, the oldest entry of the largest kind goes, unless it was used
 * since it was last looked at, in which case it is unmarked and moved to the back.
 * Hits stay a plain Map lookup, and memory grows with the entries held, not with the
 * bound. Negative entries (records that do not exist) are held apart, under their own
 * bound (`cache.negative_max_entries`, negative-store.ts): anyone can mint unknown key
 * ids, and they must never push a record out.
 */
import {
  flatCopy, type IdentityRecord, type Invalid, type KeyRecord, type OrgRecord, type RoleRecord, type UserRecord
} from '../registry/records.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import type { Cached, Entry } from './entry.js'
import { KeyTable } from './key-table.js'
import { NegativeStore } from './negative-store.js'

/** Counters read by the metrics (src/metrics) in collect callbacks: nothing per request but `++`. */
export interface CacheCounters {
  hits: number
  misses: number
  evictions: number
  invalidations: number
}

const KIND = { key: 'k:', user: 'u:', role: 'r:', org: 'o:', identity: 'd:', imported: 'i:' } as const

/** The cache's name of each record. */
export const cacheName = {
  key: (id: string) => KIND.key + id,
  user: (id: string) => KIND.user + id,
  role: (name: string) => KIND.role + name,
  org: (name: string) => KIND.org + name,
  /** an identity record (docs/identities.md) */
  identity: (id: string) => KIND.identity + id,
  /** an imported key's lookup, by the SHA-256 (hex) of the whole token; its value is the key id */
  imported: (tokenSha256: string) => KIND.imported + tokenSha256
}

/** Entries an eviction may pass over (used ones get their second chance) before it evicts anyway. */
const MAX_SECOND_CHANCES = 32

export class RecordCache {
  readonly counters: CacheCounters = { hits: 0, misses: 0, evictions: 0, invalidations: 0 }
  private readonly keys: KeyTable
  private readonly users = new Map<string, Entry<unknown>>()
  private readonly roles = new Map<string, Entry<unknown>>()
  private readonly orgs = new Map<string, Entry<unknown>>()
  private readonly identities = new Map<string, Entry<unknown>>()
  private readonly imports = new Map<string, Entry<unknown>>()
  private readonly negatives: NegativeStore
  /**
   * key ids whose record was evicted, invalidated or flushed, and the names (`i:<sha256>`)
   * of imported-key lookups that were, oldest first, at most maxEntries (see `knownKey`)
   */
  private readonly droppedIds = new Set<string>()

  /** `maxEntries`: records (`cache.max_entries`); `maxNegative`: negative entries (`cache.negative_max_entries`) */
  constructor (private readonly maxEntries: number, maxNegative = 10_000) {
    this.keys = new KeyTable(maxEntries)
    this.negatives = new NegativeStore(maxNegative, MAX_SECOND_CHANCES)
  }

  /** Entries held: records and negative entries. */
  get size (): number {
    return this.records + this.negatives.size
  }

  /** Negative entries held. */
  get negativeSize (): number {
    return this.negatives.size
  }

  private get records (): number {
    return this.keys.size + this.users.size + this.roles.size + this.orgs.size + this.identities.size +
      this.imports.size
  }

  /**
   * The key is known to exist: a record is held for its id (servable or not), or was
   * until an eviction, an invalidation or a flush dropped it. Only the unknown-key
   * budget asks (the keys in use must not look like a flood when their records have
   * to be read again); no decision is taken from it.
   */
  knownKey (id: string): boolean {
    return this.keys.has(id) || this.droppedIds.has(id)
  }

  /** The same for an imported key's lookup: held (servable or not), or dropped since. */
  knownImport (tokenSha256: string): boolean {
    return this.imports.has(tokenSha256) || this.droppedIds.has(KIND.imported + tokenSha256)
  }

  /**
   * What the refill after a flush reads again (src/cache/refill.ts): the ids of the key
   * records held, and the names (`i:<sha256>`) of the imported-key lookups held, whose
   * one read brings their key's records too (so those key ids are not listed twice).
   */
  keyIds (): string[] {
    if (this.imports.size === 0) return [...this.keys.ids()]
    const out: string[] = []
    const viaLookup = new Set<unknown>()
    for (const [sha, entry] of this.imports) {
      out.push(KIND.imported + sha)
      viaLookup.add(entry.value)
    }
    for (const id of this.keys.ids()) if (!viaLookup.has(id)) out.push(id)
    return out
  }

  /** (a new entry object each call, built from the key table) */
  key (id: string): Entry<KeyRecord | Invalid> | undefined {
    return this.keys.get(id) ?? this.negatives.get(KIND.key + id) as Entry<KeyRecord | Invalid> | undefined
  }

  user (id: string): Entry<UserRecord | Invalid> | undefined {
    return (used(this.users.get(id)) ?? this.negatives.get(KIND.user + id)) as Entry<UserRecord | Invalid> | undefined
  }

  role (name: string): Entry<RoleRecord> | undefined {
    return (used(this.roles.get(name)) ?? this.negatives.get(KIND.role + name)) as Entry<RoleRecord> | undefined
  }

  org (name: string): Entry<OrgRecord> | undefined {
    return (used(this.orgs.get(name)) ?? this.negatives.get(KIND.org + name)) as Entry<OrgRecord> | undefined
  }

  identity (id: string): Entry<IdentityRecord | Invalid> | undefined {
    return (
      used(this.identities.get(id)) ?? this.negatives.get(KIND.identity + id)
    ) as Entry<IdentityRecord | Invalid> | undefined
  }

  /** An imported key's lookup: the key id the token's SHA-256 names (null: no imported key has it). */
  imported (tokenSha256: string): Entry<string> | undefined {
    return (
      used(this.imports.get(tokenSha256)) ?? this.negatives.get(KIND.imported + tokenSha256)
    ) as Entry<string> | undefined
  }

  set (name: string, value: Cached<unknown>, at: number, tracked: boolean): void {
    if (value === null) {
      this.dropRecord(name)
      if (this.negatives.set(flatCopy(name), at, tracked)) this.counters.evictions++
      return
    }
    this.negatives.delete(name)
    if (name.startsWith(KIND.key)) {
      const id = flatCopy(name.slice(2))
      if (!this.keys.has(id) && this.records >= this.maxEntries) this.evictOne()
      this.keys.set(id, value as KeyRecord | Invalid, at, tracked)
      return
    }
    const map = this.mapOf(name)
    // a record read again (every miss reads its key's user, role and org): refreshed in
    // place, where CLOCK has it
    const held = map.get(name.slice(2))
    if (held !== undefined) {
      held.value = value
      held.at = at
      held.tracked = tracked
      return
    }
    const id = flatCopy(name.slice(2))
    if (this.records < this.maxEntries) {
      map.set(id, { value, at, tracked, used: false })
      return
    }
    this.evictOne()
    map.set(id, { value, at, tracked, used: false })
  }

  /** Drops one entry by name, record or negative (an invalidation). */
  delete (name: string): void {
    this.dropRecord(name)
    this.negatives.delete(name)
  }

  clear (): void {
    for (const id of this.keys.ids()) this.rememberDropped(id)
    for (const sha of this.imports.keys()) this.rememberDropped(KIND.imported + sha)
    this.keys.clear()
    this.users.clear()
    this.roles.clear()
    this.orgs.clear()
    this.identities.clear()
    this.imports.clear()
    this.negatives.clear()
  }

  private dropRecord (name: string): void {
    if (!name.startsWith(KIND.key)) {
      const map = this.mapOf(name)
      if (map.delete(name.slice(2)) && map === this.imports) this.rememberDropped(flatCopy(name))
      return
    }
    const id = name.slice(2)
    if (this.keys.has(id)) {
      this.keys.delete(id)
      this.rememberDropped(flatCopy(id))
    }
  }

  private rememberDropped (id: string): void {
    if (this.droppedIds.delete(id) || this.droppedIds.size < this.maxEntries) {
      this.droppedIds.add(id)
      return
    }
    const oldest = this.droppedIds.values().next()
    if (oldest.done !== true) this.droppedIds.delete(oldest.value)
    this.droppedIds.add(id)
  }

  private mapOf (name: string): Map<string, Entry<unknown>> {
    if (name.startsWith(KIND.user)) return this.users
    if (name.startsWith(KIND.role)) return this.roles
    if (name.startsWith(KIND.org)) return this.orgs
    if (name.startsWith(KIND.identity)) return this.identities
    if (name.startsWith(KIND.imported)) return this.imports
    throw new Error(`not a cache name: ${name}`)
  }

  private evictOne (): void {
    let map = this.roles.size > this.users.size ? this.roles : this.users
    if (this.orgs.size > map.size) map = this.orgs
    if (this.identities.size > map.size) map = this.identities
    if (this.imports.size > map.size) map = this.imports
    if (this.keys.size >= map.size) {
      const id = this.keys.evictOne(MAX_SECOND_CHANCES)
      if (id !== undefined) {
        this.counters.evictions++
        this.rememberDropped(id)
      }
      return
    }
    let chances = 0
    for (const [id, entry] of map) {
      map.delete(id)
      if (entry.used && chances++ < MAX_SECOND_CHANCES) {
        entry.used = false
        map.set(id, entry)
        continue
      }
      this.counters.evictions++
      if (map === this.imports) this.rememberDropped(KIND.imported + id)
      return
    }
  }
}

function used<T> (entry: Entry<T> | undefined): Entry<T> | undefined {
  if (entry !== undefined && !entry.used) entry.used = true
  return entry
}

/**
 * Push invalidation's view of the names: the registry's Redis prefixes to track, and
 * the cache name of a Redis key under them (undefined for any other key). Built once
 * per prefix; the Redis key names come from redis-keys.ts.
 */
export function cacheNaming (
  keys: RedisKeys
): { prefixes: string[], nameOf: (redisKey: string) => string | undefined } {
  const kinds: Array<[string, (id: string) => string]> = [
    [keys.key(''), cacheName.key], [keys.user(''), cacheName.user], [keys.role(''), cacheName.role],
    [keys.org(''), cacheName.org], [keys.identity(''), cacheName.identity],
    [keys.imported(''), cacheName.imported]
  ]
  return {
    prefixes: kinds.map(([redisPrefix]) => redisPrefix),
    nameOf (redisKey) {
      for (const [redisPrefix, name] of kinds) {
        if (redisKey.startsWith(redisPrefix)) return name(redisKey.slice(redisPrefix.length))
      }
      return undefined
    }
  }
}
