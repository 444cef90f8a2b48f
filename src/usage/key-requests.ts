/**
 * Each key's last decisions (`request_log`, docs/request-log.md), kept off the request
 * path as the usage counts are (counter.ts): a request appends one small record to an
 * in-memory buffer (`record`, no Redis round trip), and a timer writes the buffer every
 * `flushMs` in one pipeline: per key an LPUSH of its new records (newest first), an
 * LTRIM to `perKey` and an EXPIRE of 24 h.
 *
 * A record holds the time, method, path (its query cut off, anything key-shaped as its
 * key id at most: src/redact.ts), status, reason, latency, client address and trace id;
 * never a query string, a header value or a body. Only keys presented whole are
 * recorded (the usage counter's rule, `namesKey`): a refusal whose key does not exist,
 * or whose secret does not match, names no key of its holder, so nobody who merely
 * knows a key id can push that key's history out.
 *
 * Bounds: at most `maxBuffered` records wait in memory between two writes (past it,
 * new records are dropped and counted: the log is advisory); in Redis each key's list
 * holds `perKey` records at most and expires 24 h after its last write.
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

/** how long a key's list lives after its last write */
export const KEPT_S = 24 * 3600
/** the longest path recorded (longer ones are cut) */
const PATH_MAX = 512

/** One decision, as the admin API answers it. */
export interface KeyRequestRecord {
  time: string
  method: string
  path: string
  status: number
  reason: string
  latency_ms: number
  client: string
  trace_id: string
}

/** One decision as the buffer holds it, until the next write. */
class Held {
  constructor (
    readonly keyId: string,
    readonly at: number,
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly reason: string,
    readonly ms: number,
    readonly client: string,
    readonly traceId: string
  ) {}
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
  private buffer: Held[] = []
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
    if (this.enabled) {
      this.timer = setInterval(() => { this.flush().catch(() => {}) }, o.flushMs)
      this.timer.unref()
    }
  }

  /** Hot path: one decision of `keyId` (an array push; nothing when the key was not presented whole). */
  record (
    keyId: string, reason: Reason | undefined, method: string, path: string, status: number, ms: number,
    client: string | undefined, traceId: string, now: number
  ): void {
    if (!this.enabled || reason === undefined || !namesKey(reason)) return
    if (this.buffer.length >= this.o.maxBuffered) {
      this.dropped++
      return
    }
    // (the key id and the path are views into the request's own strings: flat copies are held)
    this.buffer.push(new Held(flatCopy(keyId), now, method, flatCopy(path), status, reason, ms, client ?? '', traceId))
  }

  /** records waiting for the next write (tests, metrics) */
  get held (): number { return this.buffer.length }

  /** Writes what the buffer holds: one pipeline, one write at a time. */
  async flush (): Promise<void> {
    while (this.writing !== undefined) await this.writing
    if (this.buffer.length === 0) return
    const batch = this.buffer
    this.buffer = []
    this.writing = this.write(batch).finally(() => { this.writing = undefined })
    await this.writing
  }

  private async write (batch: Held[]): Promise<void> {
    const perKey = new Map<string, Held[]>()
    for (const h of batch) {
      let list = perKey.get(h.keyId)
      if (list === undefined) perKey.set(h.keyId, list = [])
      list.push(h)
    }
    const line = this.redis.pipeline()
    for (const [keyId, list] of perKey) {
      const name = this.keys.keyRequests(keyId)
      // (only the last perKey of them can survive the trim: the older ones are not sent)
      line.lpush(name, ...list.slice(-this.o.perKey).map((h) => this.encode(h)))
      line.ltrim(name, 0, this.o.perKey - 1)
      line.expire(name, KEPT_S)
    }
    try {
      const replies = (await line.exec()) ?? []
      for (const [err] of replies) if (err !== null) throw err
      this.written += batch.length
      this.failing = false
    } catch (err: unknown) {
      this.dropped += batch.length
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

/** Which of a key's decisions to read: at most `limit`, of one status (`429`) or class (`4xx`) when `status` is set. */
export interface KeyRequestsQuery {
  limit: number
  status?: string | undefined
}

/** A key's last decisions, newest first (the admin API's and the CLI's read). */
export async function readKeyRequests (
  redis: RegistryClient, keys: RedisKeys, keyId: string, q: KeyRequestsQuery
): Promise<KeyRequestRecord[]> {
  // (filtered: the whole list, at most request_log.per_key)
  const rows = await redis.lrange(keys.keyRequests(keyId), 0, q.status === undefined ? q.limit - 1 : -1)
  const out: KeyRequestRecord[] = []
  for (const row of rows) {
    const r = decode(row)
    if (r !== undefined && (q.status === undefined || statusMatches(r.status, q.status))) out.push(r)
    if (out.length === q.limit) break
  }
  return out
}

function statusMatches (status: number, wanted: string): boolean {
  return wanted.endsWith('xx') ? String(status)[0] === wanted[0] : String(status) === wanted
}

function decode (row: string): KeyRequestRecord | undefined {
  let v: unknown
  try {
    v = JSON.parse(row)
  } catch {
    return undefined
  }
  if (!Array.isArray(v) || v.length !== 8) return undefined
  type Row = [number, string, string, number, string, number, string, string]
  const [at, method, path, status, reason, ms, client, traceId] = v as Row
  return {
    time: new Date(Number(at)).toISOString(),
    method: String(method),
    path: String(path),
    status: Number(status),
    reason: String(reason),
    latency_ms: Number(ms),
    client: String(client),
    trace_id: String(traceId)
  }
}
