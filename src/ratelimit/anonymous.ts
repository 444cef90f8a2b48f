/**
 * `rate_limits.anonymous` (docs/rate-limits.md, docs/routing.md): requests that pass a
 * public rule without a key, per client address (the client as trusted_proxies report
 * it, counted as src/peer.ts says: an IPv6 address as its /64), in this process.
 *
 * An anonymous request on a public path never calls Redis (docs/routing.md), so its buckets are
 * local: with N instances behind a balancer, a client may get up to N times the limit.
 * The window is the same sliding window as the shared limits' (window.ts). At most
 * `maxClients` buckets are kept; the least recently used goes for a new client.
 */
import { LruMap } from 'toad-cache'
import type { RateLimit } from '../config/rate-limit.js'
import { peerOf } from '../peer.js'
import type { Verdict } from './limiter.js'
import { take, type Counts } from './window.js'

export type AnonymousLimit = (client: string | undefined, now: number) => Verdict

export const ANONYMOUS_MAX_CLIENTS = 100_000

export function anonymousLimit (limit: RateLimit, maxClients = ANONYMOUS_MAX_CLIENTS): AnonymousLimit {
  const buckets = new LruMap<Counts>(maxClients)
  return function check (client, now) {
    const peer = peerOf(client)
    let counts = buckets.get(peer)
    if (counts === undefined) {
      counts = new Map()
      buckets.set(peer, counts)
    }
    const t = take(counts, limit, now)
    const resetS = Math.max(1, Math.ceil(t.resetMs / 1000))
    if (t.allowed) return { allowed: true, limit: limit.count, remaining: Math.max(0, limit.count - t.used), resetS }
    return { allowed: false, reason: 'rate_limited', limit: limit.count, remaining: 0, resetS, retryAfterS: resetS }
  }
}
