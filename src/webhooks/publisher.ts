/**
 * What queues events for webhooks in this process: the quota thresholds the quota stage
 * reaches (src/quota/meter.ts), each queued off the request's path (nothing waits for
 * it), once per quota, threshold and period across every instance (a guard in Redis).
 * `drain` waits for those under way (a graceful stop loses none). Admin changes need no
 * queuing: their audit entries, written with them, are their events (follow.ts).
 */
import type { ThresholdCrossed } from '../quota/meter.js'
import type { RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { eventId, queueEventOnce } from './events.js'

export class Publisher {
  private readonly pending = new Set<Promise<unknown>>()

  constructor (
    private readonly redis: RegistryClient,
    private readonly keys: RedisKeys,
    private readonly onError: (err: unknown) => void
  ) {}

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
