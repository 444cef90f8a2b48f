/**
 * The key table's index, key id -> slot, held in typed arrays outside the V8 heap.
 *
 * Every key id keygate issues (native keys and imported ones alike) is 16 base62
 * characters (registry/key-format.ts). Such an id is held as its 16 bytes in four 32-bit
 * words in the slot's row of `words`, and found through an open-addressing table of
 * slot numbers (linear probing, at most half full, deletion by backward shift: no
 * tombstones), so 100,000 ids cost about 2.4 MB of typed arrays and nothing the
 * collector scans, where a `Map` of 100,000 strings held about 7 MB on the heap and
 * made every major collection walk it. The hash is seeded per process from a random
 * value, so nobody can choose ids that collide. Any other id (a record a Redis holds
 * under a name keygate did not make) still works: it is kept in a small `Map`.
 */
import { randomBytes } from 'node:crypto'
import { ID_LENGTH } from '../registry/key-format.js'

/** the length of every id keygate makes; four words of four characters */
const ID_CHARS = 16
if (ID_LENGTH !== ID_CHARS) throw new Error('id-index: key ids are not 16 characters')
const WORDS = 4
const EMPTY = -1
const FIRST_BUCKETS = 2048

const seed = randomBytes(4).readUInt32LE(0)

/** One word of four characters, or -1 when one of them is not ASCII. */
function word (id: string, at: number): number {
  const a = id.charCodeAt(at)
  const b = id.charCodeAt(at + 1)
  const c = id.charCodeAt(at + 2)
  const d = id.charCodeAt(at + 3)
  if ((a | b | c | d) > 0x7f) return -1
  return (a | (b << 8) | (c << 16) | (d << 24)) >>> 0
}

/** murmur3's 32-bit mixing of the four words */
function mix (h: number, k: number): number {
  k = Math.imul(k, 0xcc9e2d51)
  k = (k << 15) | (k >>> 17)
  h ^= Math.imul(k, 0x1b873593)
  h = (h << 13) | (h >>> 19)
  return (Math.imul(h, 5) + 0xe6546b64) | 0
}

function finish (h: number): number {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return (h ^ (h >>> 16)) >>> 0
}

export class IdIndex {
  /** slot -> its id's four words (slots of other ids: unused) */
  private words = new Uint32Array(0)
  /** bucket -> slot, or EMPTY; a power of two, at least twice the slots */
  private buckets = new Int32Array(FIRST_BUCKETS).fill(EMPTY)
  private count = 0
  /** ids that are not 16 ASCII characters, and their slots both ways */
  private readonly others = new Map<string, number>()
  private readonly otherOf = new Map<number, string>()
  // the words of the id last looked at (`parse`), so a lookup builds no object
  private w0 = 0
  private w1 = 0
  private w2 = 0
  private w3 = 0

  /** ids held */
  get size (): number {
    return this.count + this.others.size
  }

  /** The slot of an id, or -1. */
  get (id: string): number {
    if (!this.parse(id)) return this.others.get(id) ?? -1
    const b = this.find()
    return b < 0 ? -1 : this.buckets[b] as number
  }

  /** Adds an id that is not held, at `slot`; `capacity`: the slots there may be (the columns' length). */
  add (id: string, slot: number, capacity: number): void {
    if (!this.parse(id)) {
      this.others.set(id, slot)
      this.otherOf.set(slot, id)
      return
    }
    if (this.words.length < capacity * WORDS) {
      const words = new Uint32Array(capacity * WORDS)
      words.set(this.words)
      this.words = words
    }
    const row = slot * WORDS
    this.words[row] = this.w0
    this.words[row + 1] = this.w1
    this.words[row + 2] = this.w2
    this.words[row + 3] = this.w3
    if ((this.count + 1) * 2 > this.buckets.length) this.rehash(this.buckets.length * 2)
    const mask = this.buckets.length - 1
    let b = this.hash() & mask
    while (this.buckets[b] !== EMPTY) b = (b + 1) & mask
    this.buckets[b] = slot
    this.count++
  }

  /** Removes an id; returns its slot, or -1 when it was not held. */
  delete (id: string): number {
    if (!this.parse(id)) {
      const slot = this.others.get(id)
      if (slot === undefined) return -1
      this.others.delete(id)
      this.otherOf.delete(slot)
      return slot
    }
    let b = this.find()
    if (b < 0) return -1
    const slot = this.buckets[b] as number
    // backward shift: each entry after the hole that may move into it does, so every
    // probe sequence stays unbroken
    const mask = this.buckets.length - 1
    let next = (b + 1) & mask
    while (this.buckets[next] !== EMPTY) {
      const home = this.hashOf(this.buckets[next] as number) & mask
      if (((next - home) & mask) >= ((next - b) & mask)) {
        this.buckets[b] = this.buckets[next] as number
        b = next
      }
      next = (next + 1) & mask
    }
    this.buckets[b] = EMPTY
    this.count--
    return slot
  }

  /** The id held at a slot (the slot must hold one). */
  idAt (slot: number): string {
    const other = this.otherOf.get(slot)
    if (other !== undefined) return other
    const row = slot * WORDS
    let id = ''
    for (let i = 0; i < WORDS; i++) {
      const w = this.words[row + i] as number
      id += String.fromCharCode(w & 0xff, (w >>> 8) & 0xff, (w >>> 16) & 0xff, w >>> 24)
    }
    return id
  }

  clear (): void {
    this.buckets = new Int32Array(FIRST_BUCKETS).fill(EMPTY)
    this.count = 0
    this.others.clear()
    this.otherOf.clear()
  }

  /** Reads an id into w0..w3; false when it is not 16 ASCII characters. */
  private parse (id: string): boolean {
    if (id.length !== ID_CHARS) return false
    const w0 = word(id, 0)
    const w1 = word(id, 4)
    const w2 = word(id, 8)
    const w3 = word(id, 12)
    if (w0 < 0 || w1 < 0 || w2 < 0 || w3 < 0) return false
    this.w0 = w0
    this.w1 = w1
    this.w2 = w2
    this.w3 = w3
    return true
  }

  /** The bucket holding the parsed id, or -1. */
  private find (): number {
    const mask = this.buckets.length - 1
    const words = this.words
    let b = this.hash() & mask
    for (;;) {
      const slot = this.buckets[b] as number
      if (slot === EMPTY) return -1
      const row = slot * WORDS
      if (words[row] === this.w0 && words[row + 1] === this.w1 && words[row + 2] === this.w2 &&
        words[row + 3] === this.w3) return b
      b = (b + 1) & mask
    }
  }

  private hash (): number {
    return finish(mix(mix(mix(mix(seed, this.w0), this.w1), this.w2), this.w3) ^ ID_CHARS)
  }

  private hashOf (slot: number): number {
    const row = slot * WORDS
    const w = this.words
    return finish(mix(mix(mix(mix(seed, w[row] as number), w[row + 1] as number), w[row + 2] as number),
      w[row + 3] as number) ^ ID_CHARS)
  }

  private rehash (size: number): void {
    const old = this.buckets
    this.buckets = new Int32Array(size).fill(EMPTY)
    const mask = size - 1
    for (let i = 0; i < old.length; i++) {
      const slot = old[i] as number
      if (slot === EMPTY) continue
      let b = this.hashOf(slot) & mask
      while (this.buckets[b] !== EMPTY) b = (b + 1) & mask
      this.buckets[b] = slot
    }
  }
}
