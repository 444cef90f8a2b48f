/**
 * The budget of registry fills (cache misses read from Redis) per process:
 * `cache.fills_per_second`, a token bucket holding at most a tenth of a second of
 * fills. It bounds what this process asks of Redis however many keys miss at once:
 * a new instance starting under load, the revalidation after push invalidation comes
 * back (refill.ts), a long tracking outage during which the cache is a TTL cache.
 *
 * A miss takes a token at once when one is there and nobody waits. Otherwise it
 * queues, first come first served, and waits for its token; one that could not get
 * its token within `cache.fill_wait_ms` is refused at once (`FillRefused`: 503
 * `registry_busy`), so the queue is bounded (about `fills_per_second ×
 * fill_wait_ms` misses) and nothing waits longer than that. Concurrent misses of one
 * key share one fill, so they take one token (resolve-identity.ts).
 *
 * The background refill takes only what no miss is waiting for, and leaves half the
 * bucket to the misses, so requests go first.
 */

export class FillRefused extends Error {
  override readonly name = 'FillRefused'
  constructor () {
    super('registry fill budget spent')
  }
}

export interface FillLimiterOptions {
  /** fills per second (`cache.fills_per_second`) */
  perSecond: number
  /** the longest a miss waits for its fill (`cache.fill_wait_ms`) */
  maxWaitMs: number
  now?: () => number
}

export class FillLimiter {
  /** fills refused because the queue was full */
  refused = 0
  private tokens: number
  private readonly capacity: number
  private readonly perMs: number
  private last: number
  private readonly waiters: Array<() => void> = []
  private head = 0
  private timer: NodeJS.Timeout | undefined
  private readonly now: () => number

  constructor (private readonly o: FillLimiterOptions) {
    this.now = o.now ?? (() => performance.now())
    this.perMs = o.perSecond / 1000
    this.capacity = Math.max(1, o.perSecond / 10)
    this.tokens = this.capacity
    this.last = this.now()
  }

  /** Misses waiting for their token. */
  get waiting (): number {
    return this.waiters.length - this.head
  }

  /**
   * A token for one fill: `undefined` when it is there at once, else a promise that
   * resolves when it is this fill's turn, or rejects with FillRefused when that would be
   * later than `maxWaitMs` from now.
   */
  take (): undefined | Promise<void> {
    this.refill()
    if (this.waiting === 0 && this.tokens >= 1) {
      this.tokens--
      return undefined
    }
    // this miss's token comes once the bucket has covered everyone ahead of it too
    const waitMs = (this.waiting + 1 - this.tokens) / this.perMs
    if (waitMs > this.o.maxWaitMs) {
      this.refused++
      return Promise.reject(new FillRefused())
    }
    return new Promise((resolve) => {
      this.waiters.push(resolve)
      this.schedule()
    })
  }

  /** Background refill: up to `max` tokens, only those no miss waits for, leaving half the bucket. */
  takeIdle (max: number): number {
    this.refill()
    if (this.waiting > 0) return 0
    const n = Math.max(0, Math.min(max, Math.floor(this.tokens - this.capacity / 2)))
    this.tokens -= n
    return n
  }

  private refill (): void {
    const now = this.now()
    this.tokens = Math.min(this.capacity, this.tokens + (now - this.last) * this.perMs)
    this.last = now
  }

  private schedule (): void {
    if (this.timer !== undefined || this.waiting === 0) return
    const ms = Math.max(1, Math.ceil((1 - this.tokens) / this.perMs))
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.release()
    }, ms)
  }

  private release (): void {
    this.refill()
    while (this.waiting > 0 && this.tokens >= 1) {
      this.tokens--
      const resolve = this.waiters[this.head] as () => void
      this.waiters[this.head++] = noop
      resolve()
    }
    if (this.head > 1024 && this.head * 2 > this.waiters.length) {
      this.waiters.splice(0, this.head)
      this.head = 0
    }
    this.schedule()
  }
}

function noop (): void {}
