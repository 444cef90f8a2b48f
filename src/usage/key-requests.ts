/**
 * Each key's last decisions (`request_log`, docs/request-log.md), kept off the request
 * path as the usage counts are (counter.ts): a request writes one small record into its
 * key's ring of `perKey` records in memory (`record`, no Redis round trip), and a timer
 * writes the rings every `flushMs`: per key an LPUSH of its new records (newest first), an
 * LTRIM to `perKey` and an EXPIRE of 24 h, run inside Redis by one call of the
 * REQUESTS_PUSH script for up to 500 keys (when every request is a different key, three
 * commands a key sent by the gateway would cost it more CPU than the requests).
 * Only a key's last `perKey` records can survive that trim, so a ring holds no more: a
 * busy key's record overwrites its oldest one in place, and a request allocates nothing.
 *
 * A record holds the time, method, path (its query cut off, anything key-shaped as its
 * key id at most: src/redact.ts), status, reason, latency, client address and trace id;
 * never a query string, a header value or a body. Only keys presented whole are
 * recorded (the usage counter's rule, `namesKey`): a refusal whose key does not exist,
 * or whose secret does not match, names no key of its holder, so nobody who merely
 * knows a key id can push that key's history out.
 *
 * Bounds: at most `maxBuffered` records are taken between two writes (past it, new
 * records are dropped and counted: the log is advisory), and at most `perKey` of a key's
 * are held; in Redis each key's list
 * holds `perKey` records at most and expires 24 h after its last write. A write sends
 * the keys `KEYS_PER_PIPELINE` at a time, one pipeline after the other: a second of
 * 20,000 distinct keys as one pipeline would hold their encoded records at once, which
 * outlive young-generation collections and raise the peak RSS.
 *
 * Layout: `<prefix>requests:{<keyId>}`, a list of JSON arrays
 * `[epoch ms, method, path, status, reason, latency ms, client, trace id]`.
 */
import type { Config } from '../config/schema.js'
import type { Reason } from '../errors.js'
import { createRedactor, type Redactor } from '../redact.js'
import type { KeyPrefixes } from '../registry/key-format.js'
import type { RegistryClient } from '../registry/redis-client.js'
import { flatCopy } from '../registry/records.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { namesKey } from './names-key.js'
import { BatchedWrites, defineScript, type Script } from './usage-writes.js'

/** how long a key's list lives after its last write */
export const KEPT_S = 24 * 3600
/** the longest path recorded (longer ones are cut) */
const PATH_MAX = 512
/** keys written per pipeline */
export const KEYS_PER_PIPELINE = 1000
/**
 * The write's script. KEYS: each key's list; ARGV: the records a list keeps, its lifetime in
 * seconds, then per key the number of its new records and those records, oldest first. A
 * call: 500 keys at most, and records beyond 5,000 only as one key's alone (per_key is
 * 1,000 at most).
 */
export const REQUESTS_PUSH: Script = {
  command: 'keygateRequestsPush',
  lua: `
local last = tonumber(ARGV[1]) - 1
local at = 3
for k = 1, #KEYS do
  local n = tonumber(ARGV[at])
  redis.call('LPUSH', KEYS[k], unpack(ARGV, at + 1, at + n))
  redis.call('LTRIM', KEYS[k], 0, last)
  redis.call('EXPIRE', KEYS[k], ARGV[2])
  at = at + n + 1
end
return #KEYS
`,
  limits: { names: 500, args: 5000 }
}

/** One decision as a ring holds it, until the next write or a newer decision of its key takes its place. */
class Held {
  constructor (
    public at: number,
    public method: string,
    public path: string,
    public status: number,
    public reason: string,
    public ms: number,
    public client: string,
    public traceId: string
  ) {}
}

/**
 * A key's last decisions since the last write, once it has more than one: at most `perKey`, the oldest at `next`
 * once it is full.
 */
class Ring {
  readonly items: Held[]
  next = 0
  constructor (first: Held, second: Held) {
    this.items = [first, second]
  }
}

export interface KeyRequestsOptions {
  /** false: nothing is recorded (request_log.enabled) */
  enabled?: boolean
  /** decisions kept per key (request_log.per_key) */
  perKey: number
  /** records held in memory between two writes, at most (request_log.max_buffered) */
  maxBuffered: number
  /** how often the buffer is written (request_log.flush_ms) */
  flushMs: number
  keyPrefix: KeyPrefixes
  /** told of the first failed write of a run */
  onError?: (err: unknown) => void
}

/** The configuration's `request_log` section, as the recorder takes it. */
export function keyRequestsOptions (c: Config['request_log']): Omit<KeyRequestsOptions, 'keyPrefix'> {
  return { enabled: c.enabled, perKey: c.per_key, maxBuffered: c.max_buffered, flushMs: c.flush_ms }
}

export class KeyRequests {
  /** each key's decision, or ring of them, in the order of the keys' first decision since the last write */
  private rings = new Map<string, Held | Ring>()
  /** decisions taken since the last write (those a newer one replaced in its ring included) */
  private taken = 0
  private writing: Promise<void> | undefined
  private readonly timer: NodeJS.Timeout | undefined
  private readonly redact: Redactor
  private failing = false
  private stopped = false
  readonly enabled: boolean
  /** records dropped: the buffer was full, or their write failed (metrics, tests) */
  dropped = 0
  /** records written to Redis */
  written = 0

  constructor (
    private readonly redis: RegistryClient, private readonly keys: RedisKeys, private readonly o: KeyRequestsOptions
  ) {
    this.enabled = o.enabled ?? true
    this.redact = createRedactor(o.keyPrefix)
    defineScript(redis, REQUESTS_PUSH)
    if (this.enabled) {
      this.timer = setInterval(() => { this.flush().catch(() => {}) }, o.flushMs)
      this.timer.unref()
    }
  }

  /**
   * Hot path: one decision of `keyId` (nothing when the key was not presented whole). A key's ring
   * full: the record overwrites its oldest, which the trim would drop (no allocation).
   */
  record (
    keyId: string, reason: Reason | undefined, method: string, path: string, status: number, ms: number,
    client: string | undefined, traceId: string, now: number
  ): void {
    if (!this.enabled || reason === undefined || !namesKey(reason)) return
    if (this.taken >= this.o.maxBuffered) {
      this.dropped++
      return
    }
    this.taken++
    const c = client ?? ''
    const kept = this.rings.get(keyId)
    // (the key id and the path are views into the request's own strings: flat copies are held)
    if (kept === undefined) {
      this.rings.set(flatCopy(keyId), new Held(now, method, flatCopy(path), status, reason, ms, c, traceId))
      return
    }
    let h: Held
    if (kept instanceof Ring) {
      const items = kept.items
      if (items.length < this.o.perKey) {
        items.push(new Held(now, method, flatCopy(path), status, reason, ms, c, traceId))
        return
      }
      h = items[kept.next] as Held
      kept.next = kept.next + 1 === items.length ? 0 : kept.next + 1
    } else if (this.o.perKey > 1) {
      // (the map keeps its flat copy of the key id)
      this.rings.set(keyId, new Ring(kept, new Held(now, method, flatCopy(path), status, reason, ms, c, traceId)))
      return
    } else {
      h = kept
    }
    h.at = now
    h.method = method
    // (the same path as the record it replaces, as a busy key's often is: its copy is kept)
    if (h.path !== path) h.path = flatCopy(path)
    h.status = status
    h.reason = reason
    h.ms = ms
    h.client = c
    h.traceId = traceId
  }

  /** decisions taken since the last write, those a newer one of their key replaced included (tests, metrics) */
  get held (): number { return this.taken }

  /** Writes what the rings hold: pipelines of script calls, one write at a time. */
  async flush (): Promise<void> {
    while (this.writing !== undefined) await this.writing
    if (this.taken === 0) return
    const rings = this.rings
    const taken = this.taken
    this.rings = new Map()
    this.taken = 0
    this.writing = this.write(rings, taken).finally(() => { this.writing = undefined })
    await this.writing
  }

  private async write (rings: Map<string, Held | Ring>, taken: number): Promise<void> {
    try {
      const shared = [this.o.perKey, KEPT_S]
      const writes = new BatchedWrites(this.redis, KEYS_PER_PIPELINE)
      for (const [keyId, held] of rings) {
        // oldest first: LPUSH leaves the newest at the head
        let entry: Array<string | number>
        if (held instanceof Ring) {
          const { items, next } = held
          entry = [items.length]
          for (let i = 0; i < items.length; i++) entry.push(this.encode(items[(next + i) % items.length] as Held))
        } else {
          entry = [1, this.encode(held)]
        }
        await writes.add(REQUESTS_PUSH, [this.keys.keyRequests(keyId)], shared, entry)
      }
      await writes.end()
      this.written += taken
      this.failing = false
    } catch (err: unknown) {
      this.dropped += taken
      if (!this.failing) this.o.onError?.(err)
      this.failing = true
    }
  }

  private encode (h: Held): string {
    const q = h.path.indexOf('?')
    const path = this.redact.path(q < 0 ? h.path : h.path.slice(0, q)).slice(0, PATH_MAX)
    const ms = Math.round(h.ms * 1000) / 1000
    return JSON.stringify([h.at, h.method, path, h.status, h.reason, ms, h.client, h.traceId])
  }

  /** The last write (graceful stop). */
  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    if (this.timer !== undefined) clearInterval(this.timer)
    await this.flush()
  }
}
