/**
 * The cache's key records, held column by column: a gateway caches one per key in
 * use (100,000 is a normal cache), so their size decides the process's memory.
 *
 * As objects on the V8 heap, a cached key would cost about 280 bytes (entry, record,
 * digest string, map slot), and V8 lets the old generation grow to a multiple of what
 * it holds before collecting. Here a key costs nothing on the heap: 53 bytes in typed
 * arrays (digest, two times, flags, the number of its (org, owner) pair) and about 24 in
 * its id's index (id-index.ts: the id's bytes and an open-addressing table), which the
 * collector never scans. The names are held once per pair; the fields few keys have (own
 * rate limit, restriction, shadow restriction, allowance, identity, `meta`: shared parsed
 * objects, records.ts) in one map by slot, read only for the keys flagged as having one.
 *
 * `get(id)` builds the entry and record a decision reads, short-lived objects. Keys
 * that do not exist are not held here but in the negative store (negative-store.ts).
 */
import { INVALID, type Invalid, type KeyRecord } from '../registry/records.js'
import type { Entry } from './entry.js'
import { IdIndex } from './id-index.js'

// flags, one byte a slot
const USED = 1
const TRACKED = 2
const REVOKED = 4
const KIND = 0b11000
const INVALID_RECORD = 0b01000
const PERSONAL = 0b10000
const BOT = 0b11000
/**
 * the key has one of the fields few keys have (in `extras`): its own rate limit, a restriction, a shadow
 * restriction, an allowance, an identity or `meta`; a key without one reads no map
 */
const EXTRA = 32
/** a test key (docs/test-keys.md) */
const TEST = 64

const DIGEST_BYTES = 32
/** `pairOf` of a slot without a record (INVALID, or free) */
const NO_PAIR = 0
const FIRST_CAPACITY = 1024

/** The fields of a key record few keys have. */
type Extras = Pick<KeyRecord, 'rateLimit' | 'restriction' | 'meter' | 'shadow' | 'identity' | 'meta'>

function extrasOf (r: KeyRecord): Extras | undefined {
  if (r.rateLimit === undefined && r.restriction === undefined && r.meter === undefined && r.shadow === undefined &&
    r.identity === undefined && r.meta === undefined) return undefined
  const { rateLimit, restriction, meter, shadow, identity, meta } = r
  return { rateLimit, restriction, meter, shadow, identity, meta }
}

export class KeyTable {
  /** key id -> slot (seeded hash: no one can choose colliding ids) */
  private readonly index = new IdIndex()
  private capacity = 0
  private flags = new Uint8Array(0)
  /** when the fetch that filled the slot was issued (epoch ms) */
  private at = new Float64Array(0)
  /** epoch ms; NaN: never expires */
  private expiresAt = new Float64Array(0)
  private digests = Buffer.alloc(0)
  /** the key's (org, user or role) pair, by its number in `pairs` (many keys share one) */
  private pairOf = new Uint32Array(0)
  private readonly pairs = new Pairs()
  /** slot -> the fields few keys have (shared parsed objects, records.ts), for the keys flagged EXTRA */
  private readonly extras = new Map<number, Extras>()
  private readonly free: number[] = []
  private next = 0
  /** CLOCK's hand: the slot the next eviction looks at first */
  private hand = 0

  constructor (private readonly maxSlots: number) {}

  get size (): number {
    return this.index.size
  }

  has (id: string): boolean {
    return this.index.get(id) >= 0
  }

  /** The entry for a key id, marked used (CLOCK); a new object each call. */
  get (id: string): Entry<KeyRecord | Invalid> | undefined {
    const slot = this.index.get(id)
    if (slot < 0) return undefined
    const flags = this.flags[slot] as number
    if ((flags & USED) === 0) this.flags[slot] = flags | USED
    return {
      value: this.record(slot, flags), at: this.at[slot] as number, tracked: (flags & TRACKED) !== 0, used: true
    }
  }

  /** Stores or replaces a key's entry. The caller keeps the bound: a new id needs a free slot. */
  set (id: string, value: KeyRecord | Invalid, at: number, tracked: boolean): void {
    let slot = this.index.get(id)
    if (slot < 0) {
      slot = this.allocate()
      this.index.add(id, slot, this.capacity)
    }
    const record = value === INVALID ? undefined : value
    let flags = tracked ? TRACKED : 0
    if (record === undefined) flags |= INVALID_RECORD
    else {
      flags |= record.type === 'personal' ? PERSONAL : BOT
      if (record.status !== 'active') flags |= REVOKED
      if (record.env === 'test') flags |= TEST
      this.digests.write(record.digest, slot * DIGEST_BYTES, DIGEST_BYTES, 'latin1')
    }
    this.at[slot] = at
    this.expiresAt[slot] = record?.expiresAt ?? Number.NaN
    const old = this.pairOf[slot] as number
    this.pairOf[slot] = record === undefined
      ? NO_PAIR
      : this.pairs.take(record.org, (record.type === 'personal' ? record.user : record.role) as string)
    if (old !== NO_PAIR) this.pairs.drop(old)
    const extras = record === undefined ? undefined : extrasOf(record)
    if (extras === undefined) this.extras.delete(slot)
    else {
      this.extras.set(slot, extras)
      flags |= EXTRA
    }
    this.flags[slot] = flags
  }

  /** The ids held now. */
  * ids (): IterableIterator<string> {
    for (let slot = 0; slot < this.next; slot++) {
      if (((this.flags[slot] as number) & KIND) !== 0) yield this.index.idAt(slot)
    }
  }

  delete (id: string): void {
    const slot = this.index.delete(id)
    if (slot >= 0) this.release(slot)
  }

  clear (): void {
    this.index.clear()
    this.free.length = 0
    this.next = 0
    this.hand = 0
    this.flags.fill(0)
    this.pairOf.fill(NO_PAIR)
    this.pairs.clear()
    this.extras.clear()
  }

  /**
   * CLOCK: the hand goes round the slots and drops the first entry not used since it
   * last passed; a used one is unmarked and passed over, at most `chances` times.
   * Returns the evicted id; undefined when empty.
   */
  evictOne (chances: number): string | undefined {
    if (this.index.size === 0) return undefined
    for (;;) {
      if (this.hand >= this.next) this.hand = 0
      const slot = this.hand++
      const flags = this.flags[slot] as number
      if ((flags & KIND) === 0) continue
      if ((flags & USED) !== 0 && chances-- > 0) {
        this.flags[slot] = flags & ~USED
        continue
      }
      const id = this.index.idAt(slot)
      this.index.delete(id)
      this.release(slot)
      return id
    }
  }

  private record (slot: number, flags: number): KeyRecord | Invalid {
    const kind = flags & KIND
    if (kind === INVALID_RECORD) return INVALID
    const expiresAt = this.expiresAt[slot] as number
    const pair = this.pairOf[slot] as number
    const owner = this.pairs.owner(pair)
    const personal = kind === PERSONAL
    const record: KeyRecord = {
      type: personal ? 'personal' : 'bot',
      digest: this.digests.toString('latin1', slot * DIGEST_BYTES, (slot + 1) * DIGEST_BYTES),
      org: this.pairs.org(pair),
      user: personal ? owner : undefined,
      role: personal ? undefined : owner,
      status: (flags & REVOKED) === 0 ? 'active' : 'revoked',
      expiresAt: Number.isNaN(expiresAt) ? undefined : expiresAt,
      rateLimit: undefined,
      restriction: undefined,
      env: (flags & TEST) === 0 ? 'live' : 'test'
    }
    if ((flags & EXTRA) === 0) return record
    const extras = this.extras.get(slot) as Extras
    record.rateLimit = extras.rateLimit
    record.restriction = extras.restriction
    if (extras.meter !== undefined) record.meter = extras.meter
    if (extras.shadow !== undefined) record.shadow = extras.shadow
    if (extras.identity !== undefined) record.identity = extras.identity
    if (extras.meta !== undefined) record.meta = extras.meta
    return record
  }

  private allocate (): number {
    const reused = this.free.pop()
    if (reused !== undefined) return reused
    if (this.next === this.capacity) this.grow()
    return this.next++
  }

  private release (slot: number): void {
    const pair = this.pairOf[slot] as number
    if (pair !== NO_PAIR) this.pairs.drop(pair)
    this.pairOf[slot] = NO_PAIR
    this.flags[slot] = 0
    this.extras.delete(slot)
    this.free.push(slot)
  }

  /** Columns grow by doubling, up to the bound: memory follows the entries held. */
  private grow (): void {
    const capacity = Math.min(this.maxSlots, Math.max(FIRST_CAPACITY, this.capacity * 2))
    if (capacity <= this.capacity) throw new Error('key table full: the caller must evict first')
    const flags = new Uint8Array(capacity)
    flags.set(this.flags)
    const at = new Float64Array(capacity)
    at.set(this.at)
    const expiresAt = new Float64Array(capacity)
    expiresAt.set(this.expiresAt)
    const digests = Buffer.alloc(capacity * DIGEST_BYTES)
    this.digests.copy(digests)
    const pairOf = new Uint32Array(capacity)
    pairOf.set(this.pairOf)
    this.pairOf = pairOf
    this.flags = flags
    this.at = at
    this.expiresAt = expiresAt
    this.digests = digests
    this.capacity = capacity
  }
}

/**
 * The (org, owner) pairs of the keys held, each stored once and numbered from 1, with
 * how many slots name it: thousands of keys of one user, or of one BOT role in one
 * org, cost a 4-byte number each, and a pair goes when its last key does.
 */
class Pairs {
  private readonly orgs: string[] = ['']
  private readonly owners: string[] = ['']
  private readonly refs: number[] = [0]
  /** org -> owner -> number */
  private readonly index = new Map<string, Map<string, number>>()
  private readonly free: number[] = []

  take (org: string, owner: string): number {
    let byOwner = this.index.get(org)
    if (byOwner === undefined) {
      byOwner = new Map()
      this.index.set(org, byOwner)
    }
    let n = byOwner.get(owner)
    if (n === undefined) {
      n = this.free.pop() ?? this.orgs.length
      this.orgs[n] = org
      this.owners[n] = owner
      this.refs[n] = 0
      byOwner.set(owner, n)
    }
    this.refs[n] = (this.refs[n] as number) + 1
    return n
  }

  drop (n: number): void {
    const refs = (this.refs[n] as number) - 1
    this.refs[n] = refs
    if (refs > 0) return
    const org = this.orgs[n] as string
    const byOwner = this.index.get(org)
    byOwner?.delete(this.owners[n] as string)
    if (byOwner?.size === 0) this.index.delete(org)
    this.orgs[n] = ''
    this.owners[n] = ''
    this.free.push(n)
  }

  org (n: number): string {
    return this.orgs[n] as string
  }

  owner (n: number): string {
    return this.owners[n] as string
  }

  clear (): void {
    this.orgs.length = 1
    this.owners.length = 1
    this.refs.length = 1
    this.index.clear()
    this.free.length = 0
  }
}
