/**
 * Buckets this process saw refuse, remembered until their reset: while one is
 * blocked, a request that needs it is refused here, without Redis, so a client
 * hammering past its limit costs Redis nothing further. Refusing locally never
 * allows more than Redis would (the exactness guarantee holds); the other instances
 * learn of the block from their own next refusal.
 *
 * An entry names its bucket and the limit it was refused under: a changed limit
 * (an edited record) is not held to the old block. Bounded: when full, expired
 * entries are dropped, then the oldest. (Not an LRU: a block that is still on must
 * outlive the expired ones, whichever was used last.)
 */
import type { RateLimit } from '../config/rate-limit.js'

interface Block {
  limit: RateLimit
  /** local epoch ms */
  until: number
}

export class BlockedBuckets {
  private readonly blocks = new Map<string, Block>()

  constructor (private readonly maxEntries = 100_000) {}

  /** ms left of this bucket's block under this limit; 0 when it is not blocked. */
  remaining (name: string, limit: RateLimit, now: number): number {
    const b = this.blocks.get(name)
    if (b === undefined) return 0
    if (b.until <= now) {
      this.blocks.delete(name)
      return 0
    }
    return b.limit.text === limit.text ? b.until - now : 0
  }

  block (name: string, limit: RateLimit, until: number, now: number): void {
    this.blocks.delete(name)
    if (this.blocks.size >= this.maxEntries) this.prune(now)
    this.blocks.set(name, { limit, until })
  }

  /** Blocks not yet over (the gauge; prunes the expired ones). */
  size (now: number): number {
    for (const [name, b] of this.blocks) if (b.until <= now) this.blocks.delete(name)
    return this.blocks.size
  }

  private prune (now: number): void {
    for (const [name, b] of this.blocks) if (b.until <= now) this.blocks.delete(name)
    if (this.blocks.size < this.maxEntries) return
    const oldest = this.blocks.keys().next()
    if (oldest.done !== true) this.blocks.delete(oldest.value)
  }
}
