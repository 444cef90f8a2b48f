/**
 * buildApp(config): the gateway's pieces wired together, ready to listen, never
 * listening: Redis and its health, the record cache and its push invalidation, the
 * resolver, the metrics, the decision (src/decision/decide-request.ts), then the
 * planes: src/data-plane/data-plane.ts, whose header lists the stages of a request,
 * src/admin/admin-plane.ts, and the authorizer when authz_listen is set
 * (src/authorizer/authorizer-plane.ts).
 */
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { buildAdminPlane } from './admin/admin-plane.js'
import { buildAuthorizerPlane } from './authorizer/authorizer-plane.js'
import { loadAssertions, type Assertions } from './assertion/index.js'
import { FillLimiter } from './cache/fill-limiter.js'
import { InvalidationTracker, NO_TRACKING, type Tracking } from './cache/invalidation.js'
import { recentlyUsedKeyIds, Refill } from './cache/refill.js'
import { cacheNaming, RecordCache } from './cache/record-cache.js'
import { trackingConnections } from './cache/tracking-connection.js'
import type { Config } from './config/schema.js'
import { createLogger, sinkOf } from './logger.js'
import { createMetrics, type Metrics } from './metrics/metrics.js'
import { buildDataPlane } from './data-plane/data-plane.js'
import { decisionFactory } from './decision/factory.js'
import { PROXIED_METHODS } from './http/methods.js'
import { createIdentityResolver } from './cache/resolve-identity.js'
import { cacheTimings } from './cache/timings.js'
import { createRedis, RedisHealth, type RegistryClient } from './registry/redis-client.js'
import { createTracing } from './tracing/tracing.js'
import type { Tracing } from './tracing/request-trace.js'
import { redisKeys, type RedisKeys } from './registry/redis-keys.js'
import { UsageRecorder } from './usage/last-used.js'
import { UsageCounter } from './usage/counter.js'
import { parseDuration } from './config/duration.js'
import { BlockedBuckets } from './ratelimit/blocked.js'
import { parseRateLimit } from './config/rate-limit.js'
import { createLimiter } from './ratelimit/limiter.js'
import { anonymousLimit } from './ratelimit/anonymous.js'
import { RateLimitScript } from './ratelimit/script.js'

export interface KeygateApp {
  data: FastifyInstance
  admin: FastifyInstance
  /** the authorizer listener, when authz_listen is set (src/authorizer/) */
  authz: FastifyInstance | undefined
  redis: RegistryClient
  health: RedisHealth
  cache: RecordCache
  /** push invalidation's state (`up`, `since`, `lostAt`) */
  tracking: Tracking
  /** the budget of registry reads (`cache.fills_per_second`) */
  fills: FillLimiter
  /** the background refill: warm-up at start, revalidation after push invalidation comes back */
  refill: Refill
  /** every metric, served by the admin plane at /metrics */
  metrics: Metrics
  usage: UsageRecorder
  /** each key's request counts, written every usage.flush_ms */
  counter: UsageCounter
  /** the signed identity assertion; undefined when identity.assertion is off */
  assertions: Assertions | undefined
  /** the trace context and, with tracing.otlp_endpoint, the span export (src/tracing/) */
  tracing: Tracing
  logger: Logger
  close: () => Promise<void>
}

export interface BuildOptions {
  logger?: Logger
}

export async function buildApp (config: Config, opts: BuildOptions = {}): Promise<KeygateApp> {
  const logger = opts.logger ?? createLogger(config.log.level)
  // the assertion's key files first: an unfit one stops the start before anything is opened
  const assertions = await loadAssertions(config.identity.assertion)

  const redis = createRedis(config.redis)
  const health = new RedisHealth(redis)
  health.start()
  const keys = redisKeys(config.redis.prefix)
  // The cache of parsed records, kept current by push invalidation (src/cache/invalidation.ts).
  const cache = new RecordCache(config.cache.max_entries, config.cache.negative_max_entries)
  // The budget of registry reads, and the refill that reads ahead within it what the
  // cache will need: at start, and after a flush (src/cache/refill.ts).
  const fills = new FillLimiter({ perSecond: config.cache.fills_per_second, maxWaitMs: config.cache.fill_wait_ms })
  const refill = new Refill({
    limiter: fills,
    read: (id) => resolver.refill(id),
    session: () => tracking.since,
    logger,
    warmUp: config.cache.warm_up ? async () => await recentlyUsedKeyIds(redis, keys.usage, config.cache.max_entries) : undefined
  })
  const onEstablished = (held: string[], first: boolean): void => { refill.established(held, first) }
  const tracker = config.cache.enabled && config.cache.tracking ? trackChanges(redis, keys, cache, config, logger, onEstablished) : undefined
  tracker?.start()
  const tracking = tracker ?? NO_TRACKING
  // Rate-limit buckets this process saw refuse, held until their reset (src/ratelimit/).
  const blocked = new BlockedBuckets()
  // Every metric (src/metrics/): the stages add to plain counters, read when /metrics is scraped.
  const metrics = createMetrics({
    rules: config.rules,
    upstreams: Object.keys(config.upstreams),
    redis: health,
    cacheStats: () => ({ ...cache.counters, entries: cache.size, trackingUp: tracking.up, trackingSince: tracking.since }),
    logStats: sinkOf(logger)?.stats,
    rateLimitBlocked: () => blocked.size(Date.now()),
    // (read at scrape time, once the counter below exists)
    usageHeld: () => counter.held
  })
  redis.on('error', () => { metrics.redis.connectionError() })
  const resolver = createIdentityResolver(config, redis, {
    records: cache,
    tracking,
    fills,
    health,
    onLookupError: (err) => { metrics.redis.lookupError(err) },
    limitUnknownKeys: true
  })

  const usage = new UsageRecorder(redis, keys.usage, { keys: config.cache.max_entries })
  // (its own connection: a flush, up to a few hundred script calls, never queues ahead
  // of a request's lookup on the registry's connection)
  const usageRedis = createRedis(config.redis)
  usageRedis.on('error', () => { metrics.redis.connectionError() })
  const counter = new UsageCounter(usageRedis, keys, {
    enabled: config.usage.enabled,
    flushMs: config.usage.flush_ms,
    retentionMs: parseDuration(config.usage.retention) ?? 90 * 86_400_000,
    maxKeys: config.usage.max_keys,
    // the message only: the error's command (ioredis keeps its arguments, key ids among them) is not logged
    onError: (err) => { logger.warn({ err: { message: (err as Error).message } }, 'usage: counts could not be written; they are dropped') },
    meter: metrics.usage
  })
  const limiter = createLimiter({
    script: new RateLimitScript(redis),
    blocked,
    meter: metrics.rateLimit,
    bucketPrefix: keys.rateLimit,
    defaultLimit: config.rate_limits.default === undefined ? undefined : parseRateLimit(config.rate_limits.default),
    onError: config.rate_limits.on_error
  })
  // The decision, receive to rate limits, one function for the data plane and the authorizer
  const decisions = decisionFactory(config, resolver, PROXIED_METHODS)
  // (rate_limits.anonymous: public rules without a key, per client address, in this process)
  const anonymousRate = config.rate_limits.anonymous === undefined ? undefined : parseRateLimit(config.rate_limits.anonymous)
  const anonymous = anonymousRate === undefined ? undefined : anonymousLimit(anonymousRate)
  const decider = decisions.decider({ limiter, meter: metrics.auth, anonymous })
  // ...and without the rate limits (nor the decision metrics), for open WebSockets decided again on a change
  const redecider = decisions.decider()
  // W3C trace context on every request; spans exported when tracing.otlp_endpoint is set
  const tracing = await createTracing(config.tracing, config.keys.prefix)
  // (counting off: the request's last stage is not handed the counter, and costs nothing for it)
  const counting = config.usage.enabled ? counter : undefined
  const data = await buildDataPlane({ config, logger, decider, redecider, tracking, usage, counter: counting, metrics, assertions, tracing, routes: decisions.routes })
  const admin = await buildAdminPlane({ config, logger, health, redis, decisions, metrics, usage, assertions })
  const authz = config.authz_listen !== undefined ? await buildAuthorizerPlane({ config, logger, decider, usage, counter: counting, metrics, assertions, tracing }) : undefined

  return {
    data,
    admin,
    authz,
    redis,
    health,
    cache,
    tracking,
    fills,
    refill,
    metrics,
    usage,
    counter,
    assertions,
    tracing,
    logger,
    async close () {
      await Promise.allSettled([data.close(), admin.close(), authz?.close()])
      // the spans of the last requests are exported before the gateway is gone
      await tracing.shutdown().catch(() => {})
      await usage.stop()
      // the last counts: a graceful stop loses none
      await counter.stop()
      usageRedis.disconnect()
      refill.stop()
      await tracker?.stop()
      health.stop()
      redis.disconnect()
    }
  }
}

/** Push invalidation of the cache: every write to a key, user, role or org record, by anyone. */
function trackChanges (redis: RegistryClient, keys: RedisKeys, cache: RecordCache, config: Config, logger: Logger,
  onEstablished: (held: string[], first: boolean) => void): InvalidationTracker {
  const connections = trackingConnections(redis, keys.keys)
  const tracker = new InvalidationTracker({
    connect: connections.connect,
    ...cacheNaming(keys),
    cache,
    verifyEveryMs: cacheTimings(config.cache).verifyEveryMs,
    onEstablished,
    logger
  })
  connections.watch(() => tracker.node, () => { tracker.reconnect('the registry slot moved') })
  return tracker
}
