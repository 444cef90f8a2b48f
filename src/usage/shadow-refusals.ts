/**
 * What keys' shadow restrictions would refuse (docs/safe-change.md), counted per key off
 * the request path like the usage counts (counter.ts): a request adds one to an
 * in-memory count and keeps at most EXAMPLES_HELD examples of its key, and a timer
 * writes them to Redis every `flushMs` (at most 5 s) in one pipeline. A process that
 * crashes loses its last interval at most: the counts are advisory.
 *
 * An example is the method, the decided path without its query (cut to PATH_KEPT
 * characters), the reason and the time: never a query string, a header or the key.
 *
 * Layout (src/registry/redis-keys.ts; the key id is the hash tag: one Cluster slot):
 *   <prefix>shadow:{<keyId>}          hash: `refused` (a count), `last_at` (ISO time)
 *   <prefix>shadow:{<keyId>}:recent   list of the last RECENT_KEPT examples, newest first (JSON)
 * both expiring KEPT_MS after their last write. Promoting or dropping the shadow
 * restriction deletes both (src/admin/actions/shadow-restrictions.ts).
 *
 * Memory: up to `maxKeys` distinct keys are held between writes; past it a request is
 * not counted (`dropped`).
 */
import type { RegistryClient } from '../registry/redis-client.js'
import { flatCopy } from '../registry/records.js'
import type { RedisKeys } from '../registry/redis-keys.js'

/** examples held per key between two writes */
export const EXAMPLES_HELD = 5
/** examples kept per key in Redis */
export const RECENT_KEPT = 10
/** the longest path and method an example keeps */
export const PATH_KEPT = 200
const METHOD_KEPT = 32
/** how long the counts are kept after their last write */
export const KEPT_MS = 30 * 86_400_000

export interface ShadowExample {
  method: string
  path: string
  reason: string
  /** ISO 8601 */
  at: string
}

interface Held {
  n: number
  examples: ShadowExample[]
}

export interface ShadowRefusalsOptions {
  /** how often the counts are written (default and most 5,000 ms) */
  flushMs?: number
  /** distinct keys held between writes (default 10,000) */
  maxKeys?: number
  /** told of the first failed write of a run (the counts are dropped) */
  onError?: (err: unknown) => void
}

export class ShadowRefusals {
  private held = new Map<string, Held>()
  /** requests not counted: more keys than maxKeys between writes, or a failed write */
  dropped = 0
  private failing = false
  private readonly maxKeys: number
  private readonly onError: (err: unknown) => void
  private readonly timer: NodeJS.Timeout
  private writing: Promise<void> | undefined
  private stopped = false

  constructor (
    private readonly redis: RegistryClient, private readonly keys: RedisKeys, o: ShadowRefusalsOptions = {}
  ) {
    this.maxKeys = o.maxKeys ?? 10_000
    this.onError = o.onError ?? (() => {})
    this.timer = setInterval(() => { this.flush().catch(() => {}) }, Math.min(o.flushMs ?? 5_000, 5_000))
    this.timer.unref()
  }

  /** Hot path (only for a key with a shadow restriction that would refuse): one request of `keyId`. */
  note (keyId: string, method: string, path: string, reason: string, now: number): void {
    let h = this.held.get(keyId)
    if (h === undefined) {
      if (this.held.size >= this.maxKeys) { this.dropped++; return }
      // (the key id is a view into the request's header: a flat copy is held)
      this.held.set(flatCopy(keyId), h = { n: 0, examples: [] })
    }
    h.n++
    if (h.examples.length >= EXAMPLES_HELD) h.examples.shift()
    const kept = path.length > PATH_KEPT ? path.slice(0, PATH_KEPT) : path
    // (a rule for any method matches any token a client sends: the method is cut too)
    const verb = method.length > METHOD_KEPT ? method.slice(0, METHOD_KEPT) : method
    h.examples.push({ method: flatCopy(verb), path: flatCopy(kept), reason, at: new Date(now).toISOString() })
  }

  /** Writes what is held: one write at a time. */
  async flush (): Promise<void> {
    while (this.writing !== undefined) await this.writing
    if (this.held.size === 0) return
    const batch = this.held
    this.held = new Map()
    this.writing = this.write(batch).finally(() => { this.writing = undefined })
    await this.writing
  }

  private async write (batch: Map<string, Held>): Promise<void> {
    const k = this.keys
    const pipeline = this.redis.pipeline()
    for (const [keyId, h] of batch) {
      const last = h.examples[h.examples.length - 1] as ShadowExample
      const counts = k.shadowRefusals(keyId)
      const recent = k.shadowRecent(keyId)
      pipeline.hincrby(counts, 'refused', h.n).hset(counts, 'last_at', last.at).pexpire(counts, KEPT_MS)
      pipeline.lpush(recent, ...h.examples.map((e) => JSON.stringify(e)))
        .ltrim(recent, 0, RECENT_KEPT - 1).pexpire(recent, KEPT_MS)
    }
    try {
      const replies = await pipeline.exec() ?? []
      for (const [err] of replies) if (err !== null) throw err
      this.failing = false
    } catch (err: unknown) {
      for (const h of batch.values()) this.dropped += h.n
      if (!this.failing) this.onError(err)
      this.failing = true
    }
  }

  /** Final write (graceful shutdown). */
  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    clearInterval(this.timer)
    await this.flush()
  }
}

/** The examples as Redis holds them (JSON, newest first) -> the ones that read as examples. */
export function examplesOf (raw: readonly string[]): ShadowExample[] {
  const out: ShadowExample[] = []
  for (const text of raw) {
    try {
      const e = JSON.parse(text) as Partial<ShadowExample>
      if (typeof e.method === 'string' && typeof e.path === 'string' && typeof e.reason === 'string' &&
        typeof e.at === 'string') out.push({ method: e.method, path: e.path, reason: e.reason, at: e.at })
    } catch {}
  }
  return out
}
