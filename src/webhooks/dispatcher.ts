/**
 * The webhook dispatcher: one background part per instance (src/lifecycle.ts), a loop
 * every `webhooks.poll_ms` that
 *
 *   1. fans new events out: the admin changes' from the audit trail after the cursor
 *      (follow.ts: the deliveries and the cursor's move in one transaction), and the
 *      others' (`key.expiring`, `quota.threshold`) from the events stream: XREADGROUP in
 *      the consumer group `dispatch` (each entry goes to one instance), plus XAUTOCLAIM of
 *      entries another instance read and never settled (it crashed); per entry, one
 *      transaction writes a delivery for each endpoint that wants it and XACKs the entry;
 *   2. queues `key.expiring` for keys whose expiry comes within `expiring_before`
 *      (expiring.ts), once the index by expiry holds the keys from before it (backfill.ts);
 *   3. sends the due deliveries it claimed (deliveries.ts: a lease in Redis, one
 *      instance per delivery), each signed (send.ts), and settles each: delivered,
 *      retried after base_delay_ms x 2^(attempts - 1) (at most max_delay_ms), or failed
 *      once `give_up_after` has passed since its event.
 *
 * The guarantee (docs/webhooks.md): at least once per event and endpoint; once in the
 * normal run, whatever the number of instances. A stop (`stop`) ends the loop after the
 * round under way: the deliveries in flight are sent and settled before it returns; an
 * entry read and not yet fanned out stays pending in the group (or after the cursor)
 * and is read again. Without an endpoint nothing is written and no script runs.
 */
import { hostname } from 'node:os'
import { randomBytes } from 'node:crypto'
import type { Background } from '../lifecycle.js'
import { parseDuration } from '../config/duration.js'
import type { WebhooksConfig } from '../config/schema.js'
import { duplicateClient, type RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { backfillStep } from './backfill.js'
import { claimDue, drop, readDeliveries, settle, writeDeliveries, type Delivery } from './deliveries.js'
import { readEndpoints, type Endpoint } from './endpoints.js'
import { queueExpiring } from './expiring.js'
import { followAudit } from './follow.js'
import { createSender, type Sender } from './send.js'

export const GROUP = 'dispatch'
/** an entry read and not settled for this long is taken over by another instance */
const CLAIM_IDLE_MS = 30_000
const BATCH = 100
/** keys one backfill step's SCAN looks at */
const BACKFILL_COUNT = 1000

export interface DispatcherOptions {
  /** a connection of its own */
  redis: RegistryClient
  keys: RedisKeys
  config: WebhooksConfig
  onError: (what: string, err: unknown) => void
  /** a settled delivery (metrics, tests) */
  onSettled?: (d: Delivery, status: string) => void
}

type Entry = [id: string, fields: string[]]

export class Dispatcher implements Background {
  readonly name = 'webhooks'
  private readonly consumer = `${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`
  private readonly sender: Sender
  private readonly giveUpMs: number
  private readonly retentionMs: number
  private readonly expiringMs: number
  private timer: NodeJS.Timeout | undefined
  private round: Promise<void> | undefined
  private stopped = false
  private grouped = false
  /** the index by expiry holds every key (backfill.ts): `key.expiring` may be claimed */
  private backfilled = false
  /** a connection of its own, for the steps that WATCH; opened once an endpoint exists */
  private own: RegistryClient | undefined

  constructor (private readonly o: DispatcherOptions) {
    this.sender = createSender({
      allowPrivate: o.config.allow_private_targets,
      timeoutMs: o.config.timeout_ms,
      maxResponseBytes: o.config.max_response_bytes
    })
    this.giveUpMs = parseDuration(o.config.retry.give_up_after) ?? 25 * 3_600_000
    this.retentionMs = parseDuration(o.config.deliveries_retention) ?? 7 * 86_400_000
    this.expiringMs = parseDuration(o.config.expiring_before) ?? 7 * 86_400_000
  }

  /**
   * The first round once the connection is first ready: a round sent while it still connects would
   * fail at once (no offline queue) and be reported as an outage at every start.
   */
  start (): void {
    const redis = this.o.redis
    if (redis.status === 'ready') this.schedule(0)
    else redis.once('ready', () => { this.schedule(0) })
  }

  async stop (): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.round
    await this.sender.close()
    this.own?.disconnect()
  }

  /** One round now (tests); resolves when it is done. */
  async runOnce (): Promise<void> {
    await this.round
    this.round = this.turn().then(() => {})
    await this.round
  }

  private schedule (ms: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.round = this.turn().then((busy) => { this.schedule(busy ? 0 : this.o.config.poll_ms) })
    }, ms)
  }

  /** One round; true when there is more to do at once. */
  private async turn (): Promise<boolean> {
    let busy = false
    try {
      const endpoints = await readEndpoints(this.o.redis, this.o.keys)
      // No endpoint: the events queued are dropped (none wanted them), there is nothing to
      // deliver, and the keys about to expire stay in their index until one is registered. A
      // deployment without webhooks writes nothing and runs no script for them.
      if (endpoints.length === 0 && await this.o.redis.exists(this.o.keys.webhookEvents) === 0) return false
      busy = await this.fanOut(endpoints)
      if (endpoints.length === 0) return busy && !this.stopped
      const own = await this.ownConnection()
      busy = await followAudit(own, this.o.keys, endpoints, BATCH) || busy
      if (!this.backfilled) this.backfilled = await backfillStep(own, this.o.keys, BACKFILL_COUNT)
      if (this.backfilled) await queueExpiring(this.o.redis, this.o.keys, Date.now(), this.expiringMs)
      busy = await this.deliver(new Map(endpoints.map((e) => [e.id, e]))) || !this.backfilled || busy
    } catch (err) {
      this.o.onError('round', err)
    }
    return busy && !this.stopped
  }

  private async ownConnection (): Promise<RegistryClient> {
    if (this.own === undefined) {
      this.own = duplicateClient(this.o.redis, { connectionName: 'keygate-webhooks', lazyConnect: true })
      this.own.on('error', () => {}) // reported through the failed command
      await this.own.connect()
    }
    return this.own
  }

  private async ensureGroup (): Promise<void> {
    if (this.grouped) return
    try {
      await this.o.redis.xgroup('CREATE', this.o.keys.webhookEvents, GROUP, '0', 'MKSTREAM')
    } catch (err) {
      if (!String((err as Error).message).includes('BUSYGROUP')) throw err
    }
    this.grouped = true
  }

  private async fanOut (endpoints: Endpoint[]): Promise<boolean> {
    await this.ensureGroup()
    const stream = this.o.keys.webhookEvents
    let entries: Entry[]
    try {
      const claimed = await this.o.redis.xautoclaim(stream, GROUP, this.consumer, CLAIM_IDLE_MS, '0-0', 'COUNT', BATCH)
      const read = await this.o.redis.xreadgroup(
        'GROUP', GROUP, this.consumer, 'COUNT', BATCH, 'STREAMS', stream, '>'
      ) as Array<[string, Entry[]]> | null
      entries = [...((claimed as [string, Entry[]])[1] ?? []), ...(read?.[0]?.[1] ?? [])]
    } catch (err) {
      if (String((err as Error).message).includes('NOGROUP')) this.grouped = false
      throw err
    }
    for (const [entryId, fields] of entries) {
      if (fields === null) continue // trimmed away meanwhile
      const f: Record<string, string> = {}
      for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string
      const tx = this.o.redis.multi()
      if (f.id !== undefined && f.body !== undefined && f.type !== undefined) {
        const org = f.org === '' ? undefined : f.org
        const event = { id: f.id, type: f.type, org, body: f.body, timestamp: f.at ?? new Date().toISOString() }
        writeDeliveries(tx, this.o.keys, endpoints, event, Date.now())
      }
      tx.xack(stream, GROUP, entryId)
      const replies = await tx.exec()
      for (const [err] of replies ?? []) if (err !== null) throw err
    }
    return entries.length >= BATCH
  }

  private async deliver (endpoints: Map<string, Endpoint>): Promise<boolean> {
    if (this.stopped) return false
    const now = Date.now()
    const count = this.o.config.concurrency
    // the lease outlasts an attempt: the deadline, and the time to settle it
    const ids = await claimDue(this.o.redis, this.o.keys, now, count, now + this.o.config.timeout_ms + 30_000)
    const deliveries = await readDeliveries(this.o.redis, this.o.keys, ids)
    await Promise.all(ids.map(async (id, i) => {
      try {
        await this.attempt(id, deliveries[i], endpoints)
      } catch (err) {
        this.o.onError('delivery', err)
      }
    }))
    return ids.length >= count
  }

  private async attempt (id: string, d: Delivery | undefined, endpoints: Map<string, Endpoint>): Promise<void> {
    if (d === undefined) {
      await this.o.redis.zrem(this.o.keys.webhookDue, id)
      return
    }
    const endpoint = endpoints.get(d.endpoint)
    if (endpoint === undefined) {
      await drop(this.o.redis, this.o.keys, id, 'the endpoint was removed', this.retentionMs)
      return
    }
    const attempt = await this.sender.send(endpoint, d.event_id, d.body)
    const created = Date.parse(d.created_at)
    const { base_delay_ms: base, max_delay_ms: max } = this.o.config.retry
    const delay = Math.min(max, base * 2 ** Math.min(d.attempts, 40))
    const expired = !Number.isFinite(created) || attempt.at - created >= this.giveUpMs
    const next = expired ? undefined : attempt.at + delay
    const status = await settle(this.o.redis, this.o.keys, d, attempt, next, this.retentionMs)
    this.o.onSettled?.(d, status)
  }
}
