/**
 * The gateway's cache, built from its parts in one place: the record store
 * (record-cache.ts), the fill budget (fill-limiter.ts), push invalidation over its own
 * connection (invalidation.ts, tracking-connection.ts), the resolver that reads through
 * them (resolve-identity.ts) and the refill that reads ahead what the cache will need
 * (refill.ts). Its background parts are handed back in the order they start. And the
 * one way a resolver is built, with that cache or without one (`keygate check`).
 */
import type { Logger } from 'pino'
import type { Config } from '../config/schema.js'
import type { Background } from '../lifecycle.js'
import type { CacheStats } from '../metrics/metrics.js'
import { FillLimiter } from './fill-limiter.js'
import { InvalidationTracker } from './invalidation.js'
import { NO_TRACKING, type Tracking } from './tracking.js'
import { cacheNaming, RecordCache } from './record-cache.js'
import { recentlyUsedKeyIds, Refill } from './refill.js'
import { ReadThroughCache } from './read-through.js'
import { IdentityResolver } from './resolve-identity.js'
import { cacheTimings, NO_CACHE_TIMINGS } from './timings.js'
import { UnknownKeyLimit, unknownKeyLimits } from './unknown-key-limit.js'
import { RedisHealth, type RegistryClient } from '../registry/redis-client.js'
import { RegistryReader } from '../registry/registry-reader.js'
import { redisKeys, type RedisKeys } from '../registry/redis-keys.js'
import { trackingConnections } from './tracking-connection.js'

export interface CacheOptions {
  config: Config
  redis: RegistryClient
  keys: RedisKeys
  health: RedisHealth
  logger: Logger
  /** a registry read that failed (the metrics) */
  onLookupError: (err: unknown) => void
}

export interface Cache {
  /** the parsed records (`cache.max_entries`) */
  records: RecordCache
  /** push invalidation's state (`up`, `since`, `lostAt`) */
  tracking: Tracking
  /** the budget of registry reads (`cache.fills_per_second`) */
  fills: FillLimiter
  /** the background refill: warm-up at start, revalidation after push invalidation comes back */
  refill: Refill
  resolver: IdentityResolver
  /** the cache's counters for the metrics, read at scrape time */
  stats: () => CacheStats
  /** push invalidation, then the refill: started in this order, stopped in the reverse */
  background: Background[]
  /**
   * the last moment the cache agreed with Redis (epoch ms): the later of the connection's last answer and push
   * invalidation's last answered ping. No cached decision is served past it + `cache.stale_if_error_s`
   * (read-through.ts: an untracked entry counts from the first, a tracked one from the second).
   */
  agreedAt: () => number
}

export function createCache ({ config, redis, keys, health, logger, onLookupError }: CacheOptions): Cache {
  const records = new RecordCache(config.cache.max_entries, config.cache.negative_max_entries)
  const fills = new FillLimiter({ perSecond: config.cache.fills_per_second, maxWaitMs: config.cache.fill_wait_ms })
  const tracker = config.cache.enabled && config.cache.tracking
    ? trackChanges(redis, keys, records, config, logger)
    : undefined
  const tracking = tracker ?? NO_TRACKING
  const resolver = createIdentityResolver(config, redis, {
    records,
    tracking,
    fills,
    health,
    onLookupError,
    limitUnknownKeys: true
  })
  const warmUp = config.cache.warm_up
    ? async (): Promise<string[]> => await recentlyUsedKeyIds(redis, keys.usage, config.cache.max_entries)
    : undefined
  const refill = new Refill({
    limiter: fills,
    read: (id) => resolver.refill(id),
    session: () => tracking.since,
    logger,
    warmUp
  })
  tracker?.onEstablished((held, first) => { refill.established(held, first) })

  const background: Background[] = []
  if (tracker !== undefined) {
    background.push({
      name: 'push invalidation',
      start: () => {
        tracker.start()
      },
      stop: async () => {
        await tracker.stop()
      }
    })
  }
  background.push({ name: 'refill', stop: () => { refill.stop() } })
  const stats = (): CacheStats => ({
    ...records.counters,
    entries: records.size,
    trackingUp: tracking.up,
    trackingSince: tracking.since
  })
  const agreedAt = (): number => Math.max(health.lastOkAt, tracking.verifiedAt)
  return { records, tracking, fills, refill, resolver, stats, background, agreedAt }
}

/** Push invalidation of the cache: every write to a key, user, role or org record, by anyone. */
function trackChanges (
  redis: RegistryClient,
  keys: RedisKeys,
  records: RecordCache,
  config: Config,
  logger: Logger
): InvalidationTracker {
  const connections = trackingConnections(redis, keys.keys)
  const tracker = new InvalidationTracker({
    connect: connections.connect,
    ...cacheNaming(keys),
    cache: records,
    verifyEveryMs: cacheTimings(config.cache).verifyEveryMs,
    logger
  })
  connections.watch(() => tracker.node, () => { tracker.reconnect('the registry slot moved') })
  return tracker
}

export interface ResolverParts {
  /** the record store (`cache.max_entries`); none: a small one that is never served (`enabled: false`) */
  records?: RecordCache
  tracking?: Tracking
  fills?: FillLimiter
  health?: RedisHealth
  onLookupError?: (err: unknown) => void
  /** the unknown-key budget applies (the gateway; not `keygate check`) */
  limitUnknownKeys?: boolean
}

/**
 * The one way a resolver is built: the gateway's (its cache, push invalidation, fill
 * budget and unknown-key budget) or, with `cache.enabled` false or no `records`, one
 * that reads Redis every time (`keygate check`).
 */
export function createIdentityResolver (
  config: Config,
  redis: RegistryClient,
  parts: ResolverParts = {}
): IdentityResolver {
  const enabled = config.cache.enabled && parts.records !== undefined
  const health = parts.health ?? new RedisHealth(redis)
  const cache = new ReadThroughCache({
    records: parts.records ?? new RecordCache(16),
    enabled,
    tracking: parts.tracking ?? NO_TRACKING,
    fills: parts.fills,
    health,
    timings: parts.records === undefined ? NO_CACHE_TIMINGS : cacheTimings(config.cache)
  })
  return new IdentityResolver({
    cache,
    reader: new RegistryReader(redis, redisKeys(config.redis.prefix), config.redis.prefix),
    health,
    onLookupError: parts.onLookupError,
    unknownKeys: parts.limitUnknownKeys === true ? new UnknownKeyLimit(unknownKeyLimits(config)) : undefined
  })
}
