/**
 * The budget of unknown-key lookups per client peer address
 * (`limits.unknown_keys_per_peer`). The key's checksum is a CRC-32: it catches typing
 * errors, but anyone can compute it, so a well-formed key that was never issued
 * passes every local check and costs one Redis round trip. Each peer may cause only
 * `burst` such lookups at once and `per_second` more each second (a token bucket):
 * a cache miss takes a token before Redis is asked, and gets it back unless the key
 * turned out unknown. With no token left, a miss is answered without Redis
 * (401, reason `unknown_key_limited`). Cache hits never touch the budget, nor do
 * lookups of keys the cache knows exist (RecordCache.knownKey, and knownImport for
 * an imported key's token).
 *
 * Peers are the socket's remote address, counted as src/peer.ts says (an IPv6
 * address as its /64, as for failed admin sign-ins). At most `max_peers` buckets are kept;
 * the least recently used one is dropped for a new peer.
 */
import { LruMap } from 'toad-cache'
import type { Config } from '../config/schema.js'
import { peerOf } from '../peer.js'

export interface UnknownKeyLimitOptions {
  /** tokens added per second */
  perSecond: number
  /** tokens a bucket holds at most, and a new peer's first budget */
  burst: number
  /** buckets kept at most */
  maxPeers: number
}

export function unknownKeyLimits (config: Config): UnknownKeyLimitOptions {
  const l = config.limits.unknown_keys_per_peer
  return { perSecond: l.per_second, burst: l.burst, maxPeers: l.max_peers }
}

/** One peer's budget; handed to the caller so a token can be given back. */
export interface Bucket {
  tokens: number
  /** when `tokens` was last brought up to date (epoch ms) */
  at: number
}

export class UnknownKeyLimit {
  /** peer -> bucket, bounded: the least recently used peer goes for a new one (toad-cache, which fastify uses too) */
  private readonly buckets: LruMap<Bucket>

  constructor (private readonly o: UnknownKeyLimitOptions) {
    this.buckets = new LruMap<Bucket>(o.maxPeers)
  }

  get size (): number {
    return this.buckets.size
  }

  /** Takes one lookup from the peer's budget: its bucket, or undefined when it has none left. */
  take (address: string, now: number): Bucket | undefined {
    const peer = peerOf(address)
    // (a hit makes the peer the most recently used)
    let bucket = this.buckets.get(peer)
    if (bucket === undefined) {
      bucket = { tokens: this.o.burst, at: now }
      this.buckets.set(peer, bucket)
    } else if (now > bucket.at) {
      bucket.tokens = Math.min(this.o.burst, bucket.tokens + (now - bucket.at) * this.o.perSecond / 1000)
      bucket.at = now
    }
    if (bucket.tokens < 1) return undefined
    bucket.tokens -= 1
    return bucket
  }

  /** Gives a token back: the lookup did not come back unknown. */
  refund (bucket: Bucket): void {
    bucket.tokens = Math.min(this.o.burst, bucket.tokens + 1)
  }
}
