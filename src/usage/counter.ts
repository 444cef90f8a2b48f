/**
 * How many requests each key had, per minute, counted off the request path: a request
 * adds one to an in-memory count (`count`, a Map lookup and an increment), and a timer
 * writes the counts to Redis every `flushMs` (at most 5 s), 1,000 keys a pipelined
 * write. A process that crashes loses the counts of its last interval at most.
 *
 * Four classes, from the response's status and the decision's reason (`outcomeOf`):
 * allowed (the gateway let it through, whatever the upstream answered), refused (401 or
 * 403), limited (429) and errors (a 5xx the gateway produced: upstream unreachable or
 * timed out, registry unavailable). Only keys presented whole are counted: a refusal whose
 * key does not exist (unknown id, bad format, bad checksum) names no key, so a client
 * cannot fill the map or Redis with ids of its choosing; one whose secret does not match
 * (`secret_mismatch`) is not the key's holder, so anyone who knows a key id (it is in
 * logs and on screens) cannot inflate that key's refusals.
 *
 * Layout (src/registry/redis-keys.ts; the key id or org is the hash tag, so every hash
 * of one key lives in one Cluster slot; on a Cluster the prefix's own tag, which keygate
 * requires there, comes first and puts them all in the registry's slot):
 *   <prefix>usage:{<keyId>}:m:<hour>   fields `<minute of hour><class>`   kept 48 h
 *   <prefix>usage:{<keyId>}:h:<day>    fields `<hour of day><class>`      kept usage.retention
 *   <prefix>usage-org:{<org>}:m:<hour> / :h:<day>                          the same, per org
 * with class one of `a` `r` `l` `e`, `hour` and `day` counted from the epoch (UTC). The
 * flush writes the minute and the hour at once (the roll-up is exact, and needs no
 * background step): per key and per org a few HINCRBYs and two EXPIREATs, inside one
 * EVALSHA per 500 keys whose hashes share a slot, two EVALSHAs a write, each write sent
 * when the one before was answered (so a flush of 100,000 keys never holds them all as
 * commands at once).
 *
 * Memory: counts of up to `maxKeys` distinct keys are held; past it the batch is written
 * at once and counting starts a new one (docs/usage.md gives the bytes an entry costs).
 *
 * Metrics (src/metrics/usage-metrics.ts): each write's duration and keys, failed writes,
 * and the requests whose counts were lost, by reason.
 */
import type { Reason } from '../errors.js'
import type { UsageMeter } from '../metrics/usage-metrics.js'
import type { RegistryClient } from '../registry/redis-client.js'
import { flatCopy } from '../registry/records.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { BatchedWrites, Counts, defineScript, fillOrgs, USAGE_ADD } from './usage-writes.js'
import { namesKey } from './names-key.js'

export const CLASSES = ['allowed', 'refused', 'limited', 'errors'] as const
export type UsageClass = typeof CLASSES[number]
/** the class of each field in the hashes: `<minute or hour><letter>` */
export const CLASS_LETTERS = ['a', 'r', 'l', 'e'] as const

export const MINUTE_MS = 60_000
export const HOUR_MS = 3_600_000
export const DAY_MS = 86_400_000
/** how long the minutes are kept */
export const MINUTES_KEPT_MS = 48 * HOUR_MS

/**
 * The class a response counts in (index into CLASSES), or -1: not counted (a 4xx other
 * than 401/403/429, a refusal that names no existing key).
 */
export function outcomeOf (status: number, reason: Reason | undefined): number {
  if (reason === 'allowed') return 0
  if (reason === undefined || !namesKey(reason)) return -1
  if (status === 429) return 2
  if (status === 401 || status === 403) return 1
  if (status >= 500) return 3
  return -1
}

interface Batch {
  minute: number
  counts: Map<string, Counts>
}

export interface UsageCounterOptions {
  /** false: nothing is counted or written (usage.enabled) */
  enabled?: boolean
  /** how often the counts are written (default and most 5,000 ms) */
  flushMs?: number
  /** how long the hours are kept (usage.retention) */
  retentionMs: number
  /** distinct keys held before the batch is written early (default 100,000) */
  maxKeys?: number
  /** told of the first failed write of a run (an outage; counts are lost: usage is advisory), and of falling behind */
  onError?: (err: unknown) => void
  /** told of the first write that worked after a run of failures */
  onRecovered?: () => void
  /** the metrics of the writes and of what was lost (src/metrics/usage-metrics.ts) */
  meter?: UsageMeter
}

/** keys (or orgs) a write holds: two script calls, the most sent before Redis answers */
const KEYS_A_WRITE = 1_000

/** What a meter is told when there is none. */
const NO_METER: UsageMeter = { flushed () {}, dropped () {}, full () {} }

/** requests counted in a batch */
function requestsIn (batches: readonly Batch[]): number {
  let n = 0
  for (const { counts } of batches) for (const c of counts.values()) n += c.a + c.r + c.l + c.e
  return n
}

/** keys in a batch */
function keysIn (batches: readonly Batch[]): number {
  let n = 0
  for (const { counts } of batches) n += counts.size
  return n
}

export class UsageCounter {
  private batch: Batch = { minute: 0, counts: new Map() }
  /** batches handed to the writer, waiting (at most twice maxKeys keys in all) */
  private full: Batch[] = []
  /** the writer, while it runs */
  private writing: Promise<void> | undefined
  /** keys whose counts were dropped because the writes fell behind (tests, measurements) */
  dropped = 0
  private readonly timer: NodeJS.Timeout
  private readonly maxKeys: number
  private readonly retentionMs: number
  private readonly onError: (err: unknown) => void
  private readonly onRecovered: () => void
  private failing = false // (the last write failed: the next failure is not told again)
  private readonly meter: UsageMeter
  private stopped = false
  private readonly enabled: boolean

  constructor (private readonly redis: RegistryClient, private readonly keys: RedisKeys, o: UsageCounterOptions) {
    this.maxKeys = o.maxKeys ?? 100_000
    this.retentionMs = o.retentionMs
    this.onError = o.onError ?? (() => {})
    this.onRecovered = o.onRecovered ?? (() => {})
    this.meter = o.meter ?? NO_METER
    this.enabled = o.enabled ?? true
    defineScript(redis, USAGE_ADD)
    this.timer = setInterval(() => { this.flush().catch(() => {}) }, Math.min(o.flushMs ?? 5_000, 5_000))
    this.timer.unref()
  }

  /**
   * Hot path: one response of `keyId` (undefined: no key) with `status` and the
   * decision's `reason`; `org` when the decision knows it.
   */
  count (
    keyId: string | undefined, org: string | undefined, status: number, reason: Reason | undefined, now: number
  ): void {
    if (keyId === undefined || !this.enabled) return
    const outcome = outcomeOf(status, reason)
    if (outcome < 0) return
    const minute = Math.floor(now / MINUTE_MS)
    let batch = this.batch
    if (minute !== batch.minute) batch = this.next(minute)
    let c = batch.counts.get(keyId)
    if (c === undefined) {
      if (batch.counts.size >= this.maxKeys) batch = this.next(minute)
      // (the key id is a view into the request's Authorization header: a flat copy is held)
      batch.counts.set(flatCopy(keyId), c = new Counts(org))
    } else if (c.org === undefined) {
      c.org = org
    }
    c.add(outcome)
  }

  /** Starts a new batch for `minute`; the current one is written now when it is full, at the next flush otherwise. */
  private next (minute: number): Batch {
    const old = this.batch
    this.batch = { minute, counts: new Map() }
    if (old.counts.size > 0) {
      this.hand(old)
      if (old.counts.size >= this.maxKeys) {
        this.meter.full()
        this.drain().catch(() => {})
      }
    }
    return this.batch
  }

  /**
   * A batch to the writer. While a write is under way, batches wait; past twice maxKeys
   * keys waiting (Redis takes the writes slower than new keys come), the oldest waiting
   * batch is dropped, so memory stays bounded: the counts are advisory.
   */
  private hand (batch: Batch): void {
    this.full.push(batch)
    let waiting = 0
    for (const b of this.full) waiting += b.counts.size
    while (waiting > 2 * this.maxKeys && this.full.length > 1) {
      const lost = this.full.shift() as Batch
      waiting -= lost.counts.size
      this.dropped += lost.counts.size
      this.meter.dropped(requestsIn([lost]), 'behind')
      this.onError(new Error(`the counts of ${lost.counts.size} keys were dropped: the writes fall behind`))
    }
  }

  /** Writes every count held so far: one write at a time, in order. */
  async flush (): Promise<void> {
    if (this.batch.counts.size > 0) {
      this.hand(this.batch)
      this.batch = { minute: this.batch.minute, counts: new Map() }
    }
    await this.drain()
  }

  /** The writer: writes what waits, until nothing does. */
  private async drain (): Promise<void> {
    if (this.writing === undefined) {
      if (this.full.length === 0) return
      this.writing = this.run()
    }
    await this.writing
  }

  private async run (): Promise<void> {
    try {
      // (something waits: the first write awaits before the writer is marked done)
      while (this.full.length > 0) {
        const batches = this.full
        this.full = []
        const started = performance.now()
        const written = { requests: 0 }
        try {
          await this.write(batches, written)
          this.meter.flushed(performance.now() - started, keysIn(batches), true)
          if (this.failing) {
            this.failing = false
            this.onRecovered()
          }
        } catch (err: unknown) {
          this.meter.flushed(performance.now() - started, keysIn(batches), false)
          this.meter.dropped(requestsIn(batches) - written.requests, 'failed')
          if (!this.failing) this.onError(err)
          this.failing = true
        }
      }
    } finally {
      this.writing = undefined
    }
  }

  /**
   * Writes `batches`, KEYS_A_WRITE keys (two script calls) a write, each sent when the one before was answered (a
   * write holds its names, arguments and commands until answered: 100,000 keys in one write would hold tens of MB);
   * `written` counts the requests of the writes that worked.
   */
  private async write (batches: Batch[], written: { requests: number }): Promise<void> {
    await fillOrgs(this.redis, this.keys, batches.map((b) => b.counts))
    const k = this.keys
    for (const { minute, counts } of batches) {
      const at = minute * MINUTE_MS
      const hour = Math.floor(at / HOUR_MS)
      const day = Math.floor(at / DAY_MS)
      const minuteArgs = [
        String(minute - hour * 60),
        String(hour - day * 24),
        Math.ceil(((hour + 1) * HOUR_MS + MINUTES_KEPT_MS) / 1000),
        Math.ceil(((day + 1) * DAY_MS + this.retentionMs) / 1000)
      ]
      const writes = new BatchedWrites(this.redis, KEYS_A_WRITE)
      let requests = 0
      const add = async (minutes: string, hours: string, c: Counts, counted: number): Promise<void> => {
        requests += counted
        if (!await writes.add(USAGE_ADD, [minutes, hours], minuteArgs, [c.a, c.r, c.l, c.e])) return
        written.requests += requests
        requests = 0
      }
      const orgs = new Map<string, Counts>()
      for (const [keyId, c] of counts) {
        await add(k.usageMinutes(keyId, hour), k.usageHours(keyId, day), c, c.a + c.r + c.l + c.e)
        if (c.org === undefined) continue
        let o = orgs.get(c.org)
        if (o === undefined) orgs.set(c.org, o = new Counts(c.org))
        o.a += c.a; o.r += c.r; o.l += c.l; o.e += c.e
      }
      // (an org's counts repeat its keys': they add no requests)
      for (const [org, c] of orgs) await add(k.orgUsageMinutes(org, hour), k.orgUsageHours(org, day), c, 0)
      await writes.end()
      written.requests += requests
    }
  }

  /** Final write (graceful shutdown). */
  async stop (): Promise<void> {
    if (this.stopped) return
    this.stopped = true
    clearInterval(this.timer)
    await this.flush()
  }

  /** distinct keys counted and not yet written (tests, measurements) */
  get held (): number {
    let n = this.batch.counts.size
    for (const b of this.full) n += b.counts.size
    return n
  }
}
