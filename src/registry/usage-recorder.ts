/**
 * When each key was last used, written off the request path: the gateway notes a
 * use in memory (a Map lookup on the hot path), and a timer writes the noted uses
 * in one HSET to the usage hash, at most once per key per `everyMs`. The usage hash
 * is not a record the gateway caches, so these writes never invalidate anything.
 * A failed write is dropped (usage is advisory); the next use is noted again.
 */
import type { RegistryClient } from './redis-client.js'
import { isoTimestamp } from './records.js'

export class UsageRecorder {
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
    const last = this.lastNoted.get(keyId)
    if (last !== undefined && now - last < this.everyMs) return
    this.lastNoted.set(keyId, now)
    this.pending.set(keyId, now)
  }

  async flush (now = Date.now()): Promise<void> {
    for (const [id, at] of this.lastNoted) if (now - at >= this.everyMs) this.lastNoted.delete(id)
    if (this.pending.size === 0) return
    const batch = this.pending
    this.pending = new Map()
    const fields: string[] = []
    for (const [id, at] of batch) fields.push(id, isoTimestamp(at))
    await this.redis.hset(this.usageKey, ...fields)
  }

  async stop (): Promise<void> {
    clearInterval(this.timer)
    await this.flush().catch(() => {})
  }
}
