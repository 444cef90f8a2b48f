/**
 * When each key was last used, written off the request path: the gateway notes a
 * use in memory, and a timer writes the noted uses to the usage hash, about once per
 * key per `everyMs`: one HSET of up to 1,000 fields a round trip (one HSET of every
 * field would pass its arguments on the stack, which overflows at around 100,000
 * keys), each sent when the one before was answered. Building a busy interval's
 * commands all at once would hold the event loop for ~17 ms at 45,000 keys (a
 * cold-keys profile), and every request of that turn would wait; one HSET at a time
 * holds it for one HSET's worth. One write at a time, as the request log's
 * (key-requests.ts): a flush called while one is writing waits for it, then writes
 * what was noted meanwhile. The usage hash is not a record the gateway caches, so
 * these writes never invalidate anything. A failed write is dropped with the rest of
 * its flush (usage is advisory); the next use is noted again.
 *
 * Which keys were noted recently is kept in a fixed table, not per key: slots of
 * (fingerprint, second), 8 bytes each, as many as the cache holds entries rounded up
 * to a power of two (65,536 to 1,048,576: 0.5 to 8 MiB). A key whose slot
 * holds another key's fingerprint is noted again (one more field in a batch), so the
 * table only bounds how often a key is written, never whether: a use is missed only
 * if two keys agree in slot and in a 32-bit fingerprint, and then its last_used_at
 * is at most `everyMs` old. (Only allowed requests are noted, so a client cannot
 * choose key ids to collide.) Uses noted since the last write are held in a Map
 * until the next flush, every `flushMs`.
 */
import type { RegistryClient } from '../registry/redis-client.js'
import { flatCopy, isoTimestamp } from '../registry/records.js'

const MIN_SLOTS = 1 << 16
const MAX_SLOTS = 1 << 20
const FIELDS_PER_WRITE = 1000

export interface UsageOptions {
  /** a key's use is written about once per this interval (default 60 s) */
  everyMs?: number
  /** how often the noted uses are written (default 5 s) */
  flushMs?: number
  /** how many keys are expected in use (the cache's bound): sizes the table */
  keys?: number
}

export class UsageRecorder {
  /** per slot: the fingerprint of the key last noted there, and when (whole epoch seconds) */
  private readonly noted: Uint32Array
  private readonly mask: number
  /** key id -> the second its use was noted, until the next write */
  private pending = new Map<string, number>()
  private readonly timer: NodeJS.Timeout
  private readonly everyMs: number
  /** the flush being written, if any */
  private writing: Promise<void> | undefined

  constructor (private readonly redis: RegistryClient, private readonly usageKey: string, o: UsageOptions = {}) {
    this.everyMs = o.everyMs ?? 60_000
    let slots = MIN_SLOTS
    while (slots < (o.keys ?? 0) && slots < MAX_SLOTS) slots *= 2
    this.noted = new Uint32Array(slots * 2)
    this.mask = slots - 1
    this.timer = setInterval(() => { this.flush().catch(() => {}) }, o.flushMs ?? 5_000)
    this.timer.unref()
  }

  /** Hot path: remember the use unless this key's use was noted less than `everyMs` ago. */
  record (keyId: string, now: number): void {
    const s = Math.floor(now / 1000)
    // two multiplicative hashes of the id (FNV-1a, and the same with another multiplier and
    // offset): the slot, and the fingerprint
    let a = 0x811c9dc5
    let b = 0x050c5d1f
    for (let i = 0; i < keyId.length; i++) {
      const c = keyId.charCodeAt(i)
      a = Math.imul(a ^ c, 0x01000193)
      b = Math.imul(b ^ c, 0x5bd1e995)
    }
    const at = ((a ^ (a >>> 16)) & this.mask) * 2
    const fingerprint = b >>> 0
    if (this.noted[at] === fingerprint && (s - (this.noted[at + 1] as number)) * 1000 < this.everyMs) return
    this.noted[at] = fingerprint
    this.noted[at + 1] = s
    // the request's key id is a view into its Authorization header: held until the
    // next write, it would keep the whole header alive, so a flat copy is kept instead
    this.pending.set(flatCopy(keyId), s)
  }

  async flush (): Promise<void> {
    // (the write in flight reports its own failure to its own caller)
    while (this.writing !== undefined) await this.writing.catch(() => {})
    if (this.pending.size === 0) return
    const batch = this.pending
    this.pending = new Map()
    this.writing = this.write(batch).finally(() => { this.writing = undefined })
    await this.writing
  }

  /** One HSET of up to 1,000 fields at a time, the next built when the last was answered. */
  private async write (batch: Map<string, number>): Promise<void> {
    let fields: string[] = []
    // (the uses of one flush fall in a few seconds: each second's timestamp is built once)
    let second = -1
    let stamp = ''
    for (const [id, at] of batch) {
      if (at !== second) {
        second = at
        stamp = isoTimestamp(at * 1000)
      }
      fields.push(id, stamp)
      if (fields.length === 2 * FIELDS_PER_WRITE) {
        await this.redis.hset(this.usageKey, fields)
        fields = []
      }
    }
    if (fields.length > 0) await this.redis.hset(this.usageKey, fields)
  }

  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.flush().catch(() => {})
  }
}
