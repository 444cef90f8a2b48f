/**
 * What queues events for webhooks in this process: admin changes as the admin wing
 * tells them once committed (src/admin/model/events.ts, subscribed in app.ts), and the
 * quota thresholds the quota stage reaches (src/quota/meter.ts). Each is queued off the
 * request's and the change's path (nothing waits for it); a quota threshold is queued
 * once per quota, threshold and period across every instance (a guard in Redis).
 * `drain` waits for those under way (a graceful stop loses none).
 */
import type { ThresholdCrossed } from '../quota/meter.js'
import type { RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { eventId, queueEvent, queueEventOnce } from './events.js'

/** an admin change as told: its type, time, org, and the rest is the payload's `data` */
export interface Committed {
  type: string
  at: string
  org?: string | undefined
}

export class Publisher {
  private readonly pending = new Set<Promise<unknown>>()

  constructor (
    private readonly redis: RegistryClient,
    private readonly keys: RedisKeys,
    private readonly onError: (err: unknown) => void
  ) {}

  committed (e: Committed): void {
    const { type, at, org } = e
    const data: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(e)) {
      if (v !== undefined && k !== 'type' && k !== 'at' && k !== 'org') data[k] = v
    }
    if (org !== undefined) data.org = org
    this.track(queueEvent(this.redis, this.keys, { id: eventId(), type, timestamp: at, data, org }))
  }

  quotaThreshold (t: ThresholdCrossed): void {
    const guard = this.keys.quotaThreshold(t.meter, t.periodStart, t.percent)
    const data = {
      level: t.level,
      ...t.level === 'key' ? { key_id: t.keyId } : {},
      ...t.level === 'identity' && t.identityId !== undefined ? { identity_id: t.identityId } : {},
      org: t.org,
      percent: t.percent,
      limit: t.limit,
      used: t.used,
      period_start: new Date(t.periodStart).toISOString(),
      period_end: new Date(t.periodEnd).toISOString()
    }
    const event = { id: eventId(), type: 'quota.threshold', timestamp: new Date().toISOString(), data, org: t.org }
    // the guard outlives the period by a day
    this.track(queueEventOnce(this.redis, this.keys, guard, t.periodEnd - Date.now() + 86_400_000, event))
  }

  async drain (): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending])
  }

  private track (p: Promise<unknown>): void {
    const tracked = p.catch((err: unknown) => { this.onError(err) }).finally(() => { this.pending.delete(tracked) })
    this.pending.add(tracked)
  }
}
