/**
 * The background refill: reads into the cache, ahead of the requests, the keys it
 * is known to need, within the fill budget (fill-limiter.ts), so that the cache is
 * full again in a few seconds instead of one request's miss at a time.
 *
 *   warm-up        when push invalidation is first established, the keys used most
 *                  recently (the usage hash, `last_used_at`), up to `cache.max_entries`
 *                  (`cache.warm_up`);
 *   revalidation   when push invalidation is re-established after a loss, the cache
 *                  is flushed (a write may have gone unheard, invalidation.ts), and
 *                  the key ids it held are read again.
 *
 * Each key is read through the resolver (resolve-identity.ts), with a fill ticket like
 * any miss, so a write that races the read is never installed, a request's miss for
 * the same key shares the read, and nothing is served before it is read again.
 * Reads go in batches of at most BATCH, each sent at once (pipelined), IN_FLIGHT
 * batches at a time. The ids of a batch that fails (a Redis timeout) are read again
 * after RETRY_MS. The loss of push invalidation (what would be read is a TTL entry,
 * soon stale; a Redis that stays unreachable loses it too) stops the refill; the ids
 * not read yet, and those of the batches in flight at the loss (whose installs the
 * flush refused), are kept for the next establishment.
 */
import type { Logger } from 'pino'
import type { RegistryClient } from '../registry/redis-client.js'
import type { FillLimiter } from './fill-limiter.js'

const BATCH = 256
/** batches in flight at once, so Redis runs one while the gateway parses the other */
const IN_FLIGHT = 2
/** how long to wait for the budget when the misses have taken it all */
const IDLE_MS = 5
/** how long to wait after a failed batch */
const RETRY_MS = 1000

export interface RefillOptions {
  limiter: FillLimiter
  /**
   * reads one key id's records (or an imported key's lookup and records, by its cache
   * name `i:<sha256>`); undefined when it need not be read (cached, or being read)
   */
  read: (keyId: string) => Promise<unknown> | undefined
  /**
   * when push invalidation was last established (epoch ms; 0 while it is down): while
   * it is up, what is read stays cached until it changes
   */
  session: () => number
  logger: Logger
  /** `cache.warm_up`: the recently used key ids to read at start (`recentlyUsedKeyIds`) */
  warmUp?: (() => Promise<string[]>) | undefined
}

/** How many times the warm-up tries to read the usage hash. */
const WARM_UP_ATTEMPTS = 5

export class Refill {
  /** key ids still to read, in order */
  private pending = new Set<string>()
  private running = false
  private stopped = false
  /** reads issued so far (tests) */
  done = 0

  constructor (private readonly o: RefillOptions) {}

  /** Keys still to read. */
  get size (): number {
    return this.pending.size
  }

  /** Adds key ids to read and starts reading, unless already running. */
  add (ids: Iterable<string>, why: string): void {
    for (const id of ids) this.pending.add(id)
    if (this.running || this.stopped || this.pending.size === 0) return
    this.running = true
    this.o.logger.info({ keys: this.pending.size, why }, 'cache: refill started')
    const started = performance.now()
    const done = this.done
    Promise.allSettled(Array.from({ length: IN_FLIGHT }, async () => await this.run())).then((loops) => {
      this.running = false
      const failed = loops.find((l) => l.status === 'rejected')
      if (failed !== undefined) {
        this.o.logger.warn(
          { err: { message: (failed.reason as Error).message }, left: this.pending.size }, 'cache: refill stopped'
        )
      } else if (!this.stopped) {
        this.o.logger.info(
          { reads: this.done - done, ms: Math.round(performance.now() - started) }, 'cache: refill done'
        )
      }
    })
  }

  /**
   * Push invalidation is established (`first`: for the first time): the keys the cache
   * holds are read again (revalidation); the first time, with the warm-up on, the
   * recently used keys too.
   */
  established (held: string[], first: boolean): void {
    if (!first || this.o.warmUp === undefined) {
      this.add(held, 'revalidation')
      return
    }
    this.warmUp(held, 1)
  }

  /**
   * The warm-up's read of the usage hash, tried again a second later when Redis did not
   * answer (a gateway starting beside a busy Redis), WARM_UP_ATTEMPTS times at most.
   */
  private warmUp (held: string[], attempt: number): void {
    const read = this.o.warmUp as () => Promise<string[]>
    read().then((ids) => { this.add([...held, ...ids], 'warm-up') }, (err: unknown) => {
      const again = attempt < WARM_UP_ATTEMPTS
      this.o.logger.warn(
        { err: { message: (err as Error).message }, attempt },
        again
          ? 'cache: the usage hash could not be read for the warm-up; trying again'
          : 'cache: no warm-up (the usage hash could not be read)'
      )
      if (again) setTimeout(() => { if (this.o.session() !== 0) this.warmUp(held, attempt + 1) }, 1000).unref()
      else this.add(held, 'revalidation')
    })
  }

  stop (): void {
    this.stopped = true
    this.pending.clear()
  }

  /** one of the IN_FLIGHT loops: a batch at a time */
  private async run (): Promise<void> {
    const { limiter } = this.o
    let ids = this.pending.values()
    while (!this.stopped && this.pending.size > 0) {
      const session = this.o.session()
      if (session === 0) throw new Error('push invalidation lost')
      const budget = limiter.takeIdle(BATCH)
      if (budget === 0) {
        await sleep(IDLE_MS)
        continue
      }
      const reads: Array<Promise<unknown>> = []
      const batch: string[] = []
      while (reads.length < budget) {
        const next = ids.next()
        if (next.done === true) {
          ids = this.pending.values()
          if (this.pending.size === 0) break
          continue
        }
        this.pending.delete(next.value)
        const read = this.o.read(next.value)
        if (read === undefined) continue
        reads.push(read)
        batch.push(next.value)
      }
      const results = await Promise.allSettled(reads)
      this.done += reads.length
      if (this.o.session() !== session) {
        // push invalidation was lost while the batch was in flight: the flush refused its
        // fill tickets, so none of it may be cached; the next establishment reads it again
        for (const id of batch) this.pending.add(id)
        continue
      }
      let failed = 0
      results.forEach((r, i) => {
        if (r.status === 'fulfilled') return
        failed++
        this.pending.add(batch[i] as string)
      })
      if (failed > 0) {
        this.o.logger.warn({ failed, left: this.pending.size }, 'cache: refill reads failed; retrying')
        await sleep(RETRY_MS)
      }
    }
  }
}

async function sleep (ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms))
}

/**
 * The warm-up's key ids: up to `max` from the usage hash (key id -> `last_used_at`,
 * an ISO timestamp), most recently used first. It reads at most about twice `max` of
 * the hash's fields (HSCAN), so a registry far larger than the cache costs a bounded
 * read at start.
 */
export async function recentlyUsedKeyIds (redis: RegistryClient, usageKey: string, max: number): Promise<string[]> {
  const seen: Array<[string, string]> = []
  let cursor = '0'
  do {
    const [next, flat] = await redis.hscan(usageKey, cursor, 'COUNT', 1000)
    for (let i = 0; i + 1 < flat.length; i += 2) seen.push([flat[i] as string, flat[i + 1] as string])
    cursor = next
  } while (cursor !== '0' && seen.length < 2 * max)
  seen.sort((a, b) => a[1] < b[1] ? 1 : a[1] > b[1] ? -1 : 0)
  return seen.slice(0, max).map(([id]) => id)
}
