/**
 * When each key was last used, written off the request path: the gateway notes a
 * use in memory (a Map lookup on the hot path), and a timer writes the noted uses
 * in one HSET to the usage hash, at most once per key per `everyMs`. The usage hash
 * is not a record the gateway caches, so these writes never invalidate anything.
 * A failed write is dropped (usage is advisory); the next use is noted again.
 */
import type { RegistryClient } from './redis-client.js'
import { flatCopy, isoTimestamp } from './records.js'

export class UsageRecorder {
  /**
   * key id -> when its use was last noted, in whole epoch seconds (the precision of
   * last_used_at, and a small integer V8 stores unboxed); one entry per key used in
   * the last `everyMs`
   */
  private readonly lastNoted = new Map<string, number>()
  private pending = new Map<string, number>()
  private readonly timer: NodeJS.Timeout

  constructor (
    private readonly redis: RegistryClient,
    private readonly usageKey: string,
    private readonly everyMs = 60_000,
    flushMs = 5_000
  ) {
    this.timer = setInterval(() => { this.flush().catch(() => {}) }, flushMs)
    this.timer.unref()
  }

  /** Hot path: remember the use unless this key's use was noted less than `everyMs` ago. */
  record (keyId: string, now: number): void {
    const s = Math.floor(now / 1000)
    const last = this.lastNoted.get(keyId)
    if (last !== undefined && (s - last) * 1000 < this.everyMs) return
    // the request's key id is a view into its Authorization header: held here for up to
    // `everyMs`, it would keep the whole header alive, so a flat copy is kept instead
    const id = flatCopy(keyId)
    this.lastNoted.set(id, s)
    this.pending.set(id, s)
  }

  async flush (now = Date.now()): Promise<void> {
    const s = Math.floor(now / 1000)
    for (const [id, at] of this.lastNoted) if ((s - at) * 1000 >= this.everyMs) this.lastNoted.delete(id)
    if (this.pending.size === 0) return
    const batch = this.pending
    this.pending = new Map()
    const fields: string[] = []
    for (const [id, at] of batch) fields.push(id, isoTimestamp(at * 1000))
    await this.redis.hset(this.usageKey, ...fields)
  }

  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.flush().catch(() => {})
  }
}
