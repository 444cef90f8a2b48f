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
import { createAuthenticator } from './decision/authenticate-request.js'
import { buildDataPlane } from './data-plane/data-plane.js'
import { createDecider } from './decision/decide-request.js'
import { compileRules } from './decision/match-rule.js'
import { PROXIED_METHODS } from './http/methods.js'
import { IdentityResolver } from './cache/resolve-identity.js'
import { compileRouteTable } from './decision/route-table.js'
import { UnknownKeyLimit, unknownKeyLimits } from './cache/unknown-key-limit.js'
import { createRedis, RedisHealth, type RegistryClient } from './registry/redis-client.js'
import { createTracing, type Tracing } from './tracing/tracing.js'
import { redisKeys, type RedisKeys } from './registry/redis-keys.js'
import { RegistryReader } from './registry/registry-reader.js'
import { UsageRecorder } from './registry/usage-recorder.js'
import { BlockedBuckets } from './ratelimit/blocked.js'
import { parseRateLimit } from './ratelimit/limit.js'
import { createLimiter } from './ratelimit/limiter.js'
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
  const refill = new Refill({ limiter: fills, read: (id) => resolver.refill(id), active: () => tracking.up, logger })
  const onEstablished = (held: string[], first: boolean): void => {
    if (!first || !config.cache.warm_up) {
      refill.add(held, 'revalidation')
      return
    }
    warmUp(held, 1)
  }
  // The warm-up's read of the usage hash, tried again a second later when Redis did not
  // answer (a gateway starting beside a busy Redis), WARM_UP_ATTEMPTS times at most.
  const warmUp = (held: string[], attempt: number): void => {
    recentlyUsedKeyIds(redis, keys.usage, config.cache.max_entries).then((ids) => { refill.add([...held, ...ids], 'warm-up') }, (err: unknown) => {
      const again = attempt < WARM_UP_ATTEMPTS
      logger.warn({ err: { message: (err as Error).message }, attempt }, again ? 'cache: the usage hash could not be read for the warm-up; trying again' : 'cache: no warm-up (the usage hash could not be read)')
      if (again) setTimeout(() => { if (tracking.up) warmUp(held, attempt + 1) }, 1000).unref()
      else refill.add(held, 'revalidation')
    })
  }
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
    rateLimitBlocked: () => blocked.size(Date.now())
  })
  redis.on('error', () => { metrics.redis.connectionError() })
  const resolver = new IdentityResolver({
    reader: new RegistryReader(redis, keys, config.redis.prefix),
    onLookupError: (err) => { metrics.redis.lookupError(err) },
    unknownKeys: new UnknownKeyLimit(unknownKeyLimits(config)),
    cache,
    cacheEnabled: config.cache.enabled,
    tracking,
    fills,
    health,
    ttlMs: config.cache.ttl_ms,
    negativeTtlMs: config.cache.negative_ttl_ms,
    staleIfErrorMs: config.cache.stale_if_error_s * 1000
  })

  const usage = new UsageRecorder(redis, keys.usage, { keys: config.cache.max_entries })
  const limiter = createLimiter({
    script: new RateLimitScript(redis),
    blocked,
    meter: metrics.rateLimit,
    bucketPrefix: keys.rateLimit,
    defaultLimit: config.rate_limits.default === undefined ? undefined : parseRateLimit(config.rate_limits.default),
    onError: config.rate_limits.on_error
  })
  // The decision, receive to rate limits, one function for the data plane and the authorizer
  const matchRule = compileRules(config.rules, PROXIED_METHODS)
  const routeOf = compileRouteTable(config.routes)
  const decider = createDecider({
    authenticate: createAuthenticator({ keyPrefix: config.keys.prefix, resolver, meter: metrics.auth }),
    matchRule,
    routeOf,
    limiter
  })
  // ...and without the rate limits (nor the decision metrics), for open WebSockets decided again on a change
  const redecider = createDecider({ authenticate: createAuthenticator({ keyPrefix: config.keys.prefix, resolver }), matchRule, routeOf })
  // W3C trace context on every request; spans exported when tracing.otlp_endpoint is set
  const tracing = createTracing(config.tracing, config.keys.prefix)
  const data = await buildDataPlane({ config, logger, decider, redecider, tracking, usage, metrics, assertions, tracing })
  const admin = await buildAdminPlane({ config, logger, health, redis, resolver, metrics, usage, assertions })
  const authz = config.authz_listen !== undefined ? await buildAuthorizerPlane({ config, logger, decider, usage, metrics, assertions, tracing }) : undefined

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
    assertions,
    tracing,
    logger,
    async close () {
      await Promise.allSettled([data.close(), admin.close(), authz?.close()])
      // the spans of the last requests are exported before the gateway is gone
      await tracing.shutdown().catch(() => {})
      await usage.stop()
      refill.stop()
      await tracker?.stop()
      health.stop()
      redis.disconnect()
    }
  }
}

/** How many times the warm-up tries to read the usage hash. */
const WARM_UP_ATTEMPTS = 5

/** Push invalidation of the cache: every write to a key, user, role or org record, by anyone. */
function trackChanges (redis: RegistryClient, keys: RedisKeys, cache: RecordCache, config: Config, logger: Logger,
  onEstablished: (held: string[], first: boolean) => void): InvalidationTracker {
  const connections = trackingConnections(redis, keys.keys)
  const tracker = new InvalidationTracker({
    connect: connections.connect,
    ...cacheNaming(keys),
    cache,
    // a silent channel is only trusted for cache.ttl_ms: confirm it twice per TTL
    verifyEveryMs: Math.min(1000, Math.max(50, Math.floor(config.cache.ttl_ms / 2))),
    onEstablished,
    logger
  })
  connections.watch(() => tracker.node, () => { tracker.reconnect('the registry slot moved') })
  return tracker
}
