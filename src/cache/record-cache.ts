/**
 * The bounded in-process cache of parsed registry records (key, user and role
 * records, each under its own name). Entries carry the time their fetch was
 * issued; whether an entry may still be served is the resolver's decision.
 */
import { LRUCache } from 'lru-cache'
import type { Invalid, KeyRecord, RoleRecord, UserRecord } from '../registry/records.js'

/** A record that does not exist in Redis is cached too (negative entry). */
export type Cached<T> = T | null

export interface Entry<T> {
  value: Cached<T>
  at: number
}

export class RecordCache {
  private readonly lru: LRUCache<string, Entry<unknown>>

  constructor (maxEntries: number) {
    this.lru = new LRUCache({ max: maxEntries })
  }

  key (id: string): Entry<KeyRecord | Invalid> | undefined {
    return this.lru.get('k:' + id) as Entry<KeyRecord | Invalid> | undefined
  }

  user (id: string): Entry<UserRecord | Invalid> | undefined {
    return this.lru.get('u:' + id) as Entry<UserRecord | Invalid> | undefined
  }

  role (name: string): Entry<RoleRecord> | undefined {
    return this.lru.get('r:' + name) as Entry<RoleRecord> | undefined
  }

  setKey (id: string, value: Cached<KeyRecord | Invalid>, at: number): void {
    this.lru.set('k:' + id, { value, at })
  }

  setUser (id: string, value: Cached<UserRecord | Invalid>, at: number): void {
    this.lru.set('u:' + id, { value, at })
  }

  setRole (name: string, value: Cached<RoleRecord>, at: number): void {
    this.lru.set('r:' + name, { value, at })
  }
}
