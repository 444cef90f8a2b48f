/**
 * buildApp(config): the gateway's pieces wired together, ready to listen, never
 * listening: Redis and its health, the record cache and its push invalidation, the
 * resolver, the metrics, the decision (src/decision/decide-request.ts), then the
 * planes: src/data-plane/data-plane.ts, whose header lists the stages of a request,
 * src/admin/admin-plane.ts, the authorizer when authz_listen is set
 * (src/authorizer/authorizer-plane.ts), and the gRPC authorizer when authz_grpc_listen is
 * set (src/authorizer-grpc/grpc-authorizer.ts).
 */
import type { FastifyInstance } from 'fastify'
import type { Logger } from 'pino'
import { buildAdminPlane, buildOpsPlane } from './admin/admin-plane.js'
import { adminActions, adminWing } from './admin/actions/index.js'
import { publicReports } from './admin/leaks/public-reports.js'
import { keySelfActions } from './admin/self-service.js'
import { PUBLIC_REPORTER } from './admin/model/actors.js'
import { FULL_ADMIN } from './admin/model/principal.js'
import { buildAuthorizerPlane } from './authorizer/authorizer-plane.js'
import type { GrpcAuthorizer } from './authorizer-grpc/grpc-authorizer.js'
import { loadAssertions, type Assertions } from './assertion/index.js'
import { createCache } from './cache/create-cache.js'
import type { FillLimiter } from './cache/fill-limiter.js'
import type { Tracking } from './cache/tracking.js'
import type { Refill } from './cache/refill.js'
import type { RecordCache } from './cache/record-cache.js'
import type { Config } from './config/schema.js'
import { Lifecycle } from './lifecycle.js'
import { createLogger, sinkOf } from './logger.js'
import { createMetrics, type Metrics } from './metrics/metrics.js'
import { buildDataPlane } from './data-plane/data-plane.js'
import { createUpstreams, type Upstreams } from './data-plane/upstream-pool/upstreams.js'
import { decisionFactory } from './decision/factory.js'
import { PROXIED_METHODS } from './http/methods.js'
import { createRedis, RedisHealth, type RegistryClient } from './registry/redis-client.js'
import { logRedisOutages } from './registry/outage-log.js'
import { createTracing } from './tracing/tracing.js'
import type { Tracing } from './tracing/request-trace.js'
import { redisKeys } from './registry/redis-keys.js'
import type { UsageRecorder } from './usage/last-used.js'
import type { ShadowRefusals } from './usage/shadow-refusals.js'
import type { UsageCounter } from './usage/counter.js'
import type { KeyRequests } from './usage/key-requests.js'
import { createUsageParts } from './usage/parts.js'
import { startAuditExport } from './admin/audit-export/index.js'
import { BlockedBuckets } from './ratelimit/blocked.js'
import { parseRateLimit } from './config/rate-limit.js'
import { createLimiter } from './ratelimit/limiter.js'
import { createQuotaMeter } from './quota/meter.js'
import { QuotaScript } from './quota/script.js'
import { upstreamCost } from './quota/upstream-cost.js'
import { anonymousLimit } from './ratelimit/anonymous.js'
import { RateLimitScript } from './ratelimit/script.js'
import { keyPrefixesOf } from './registry/key-format.js'
import { createWebhooks, type Webhooks } from './webhooks/index.js'

export interface KeygateApp {
  data: FastifyInstance
  admin: FastifyInstance
  /** the authorizer listener, when authz_listen is set (src/authorizer/) */
  authz: FastifyInstance | undefined
  /** the gRPC authorizer (Envoy's ext_authz), when authz_grpc_listen is set (src/authorizer-grpc/) */
  authzGrpc: GrpcAuthorizer | undefined
  /** `/healthz`, `/readyz` and `/metrics` on their own listener, when ops_listen is set (src/admin/ops-routes.ts) */
  ops: FastifyInstance | undefined
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
  /** what keys' shadow restrictions would refuse, held until written (src/usage/shadow-refusals.ts) */
  shadowRefusals: ShadowRefusals
  /** each key's last decisions, written every request_log.flush_ms */
  requests: KeyRequests
  /** the signed identity assertion; undefined when identity.assertion is off */
  assertions: Assertions | undefined
  /** the trace context and, with tracing.otlp_endpoint, the span export (src/tracing/) */
  tracing: Tracing
  logger: Logger
  /** the background parts, in the order they start (src/lifecycle.ts) */
  lifecycle: Lifecycle
  /** every upstream's dispatcher (src/data-plane/upstream-pool/) */
  upstreams: Upstreams
  /** SIGHUP: re-reads the upstreams' TLS files; the problems when they cannot be used (nothing changed then) */
  reloadUpstreamTls: () => string[]
  /** the webhooks' publisher and dispatcher (src/webhooks/, docs/webhooks.md) */
  webhooks: Webhooks
  /** a graceful stop: every background part, last started first, each drained */
  close: () => Promise<void>
}

export interface BuildOptions {
  logger?: Logger
}

export async function buildApp (config: Config, opts: BuildOptions = {}): Promise<KeygateApp> {
  const logger = opts.logger ?? createLogger(config.log.level, undefined, config.log.format)
  // the assertion's key files first: an unfit one stops the start before anything is opened
  const assertions = await loadAssertions(config.identity.assertion)
  // The background parts, each added after those it relies on: started in this order
  // once everything is built, stopped in the reverse order by close() (src/lifecycle.ts).
  const lifecycle = new Lifecycle((name, err) => {
    logger.warn({ err: { message: (err as Error).message }, part: name }, 'stop: a part did not stop cleanly')
  })

  const redis = createRedis(config.redis)
  const health = new RedisHealth(redis)
  lifecycle.add({
    name: 'registry connection',
    start: () => { health.start() },
    stop: () => { health.stop(); redis.disconnect() }
  })
  const keys = redisKeys(config.redis.prefix)
  // Every metric (src/metrics/): the stages add to plain counters, read when /metrics is scraped.
  const metrics = createMetrics({
    rules: config.rules,
    upstreams: Object.keys(config.upstreams),
    upstreamTargets: Object.fromEntries(Object.entries(config.upstreams).flatMap(([name, u]) =>
      u.targets === undefined ? [] : [[name, u.targets.map((t) => new URL(t).origin)]])),
    redis: health,
    logStats: sinkOf(logger)?.stats
  })
  redis.on('error', () => { metrics.redis.connectionError() })
  // The cache of parsed records, kept current by push invalidation, read through by the
  // resolver within the fill budget, and refilled ahead of the requests (src/cache/).
  const cache = createCache({
    config, redis, keys, health, logger, onLookupError: (err) => { metrics.redis.lookupError(err) }
  })
  for (const part of cache.background) lifecycle.add(part)
  // an outage, its stale window's end and the recovery, one line each (src/registry/outage-log.ts); the window
  // runs from the cache's last agreement with Redis
  const outages = logRedisOutages(health, logger, {
    url: config.redis.url, staleIfErrorMs: config.cache.stale_if_error_s * 1000, agreedAt: cache.agreedAt
  })
  lifecycle.add({ name: 'outage log', stop: () => { outages.stop() } })

  // What the gateway writes about keys' use, off the request path (src/usage/parts.ts)
  const { counter, requests, shadowRefusals, usage } = createUsageParts({
    config, redis, keys, logger, metrics, lifecycle
  })

  // Rate-limit buckets this process saw refuse, held until their reset (src/ratelimit/).
  const blocked = new BlockedBuckets()
  const limiter = createLimiter({
    script: new RateLimitScript(redis),
    blocked,
    meter: metrics.rateLimit,
    bucketPrefix: keys.rateLimit,
    defaultLimit: config.rate_limits.default === undefined ? undefined : parseRateLimit(config.rate_limits.default),
    onError: config.rate_limits.on_error
  })
  // Webhooks: events read from the audit trail and queued off every path, delivered by one dispatcher per instance
  // (src/webhooks/)
  const webhooks = createWebhooks(config, keys, logger)
  for (const part of webhooks.parts) lifecycle.add(part)
  // Quotas and credits: checked and spent in Redis, batched per turn of the event loop (src/quota/)
  const quota = createQuotaMeter({
    script: new QuotaScript(redis),
    keys,
    metrics: metrics.quota,
    onError: config.quota.on_error,
    onThreshold: (t) => { webhooks.publisher.quotaThreshold(t) }
  })
  metrics.observe({
    cacheStats: cache.stats, rateLimitBlocked: () => blocked.size(Date.now()), usageHeld: () => counter.held
  })

  // The decision, receive to rate limits, one function for the data plane and the authorizer
  const decisions = decisionFactory(config, cache.resolver, PROXIED_METHODS)
  // (rate_limits.anonymous: public rules without a key, per client address, in this process)
  const anonymousRate = config.rate_limits.anonymous === undefined
    ? undefined
    : parseRateLimit(config.rate_limits.anonymous)
  const anonymous = anonymousRate === undefined ? undefined : anonymousLimit(anonymousRate)
  const decider = decisions.decider({
    limiter, quota, meter: metrics.auth, anonymous, shadowMeter: metrics.shadow, shadowRefusals
  })
  // ...and without the rate limits (nor the decision metrics), for open WebSockets decided again on a change
  const redecider = decisions.decider()
  // the verify API and a key about itself: the same authentication and cache, limits and quotas
  const verifier = decisions.verifier({ limiter, quota, meter: metrics.auth })
  // W3C trace context on every request; spans exported when tracing.otlp_endpoint is set
  const tracing = await createTracing(config.tracing, keyPrefixesOf(config.keys))
  // the spans of the last requests are exported before the gateway is gone
  lifecycle.add({ name: 'span export', stop: async () => { await tracing.shutdown().catch(() => {}) } })
  // (counting off: the request's last stage is not handed the counter, and costs nothing for it)
  const counting = config.usage.enabled ? counter : undefined
  const { tracking } = cache
  // every upstream's dispatcher: one origin's agent, or a pool of targets with their health checks
  const upstreams = createUpstreams(config, { logger, targetStates: metrics.targetStates })
  // (closed once the listeners have stopped: registered before them)
  lifecycle.add({ name: 'upstreams', stop: async () => { await upstreams.close() } })
  // (cost: upstream: the data plane debits what the response reports, the authorizer the rule's default_cost)
  const costs = upstreamCost(config.quota.cost_header, quota, () => { metrics.quota.outcome('debit_failed') })
  // anyone's leak reports, looked up after the data plane answered; drained after the listeners stop
  const wing = adminWing(config, redis)
  const leakReports = publicReports({
    actions: adminActions(wing, FULL_ADMIN, PUBLIC_REPORTER),
    logger,
    maxPending: config.leaks.public.max_pending
  })
  lifecycle.add({ name: 'public leak reports', stop: async () => { await leakReports.drain() } })
  // the audit trail shipped as OpenTelemetry logs, with audit.otlp_endpoint (src/admin/audit-export/)
  const auditExport = await startAuditExport(config, logger, metrics)
  if (auditExport !== undefined) lifecycle.add(auditExport)
  // what every request front end is given: the decision, what it records of each request, its outputs
  const frontEnd = { config, logger, decider, usage, counter: counting, requests, metrics, assertions, tracing }
  const data = await buildDataPlane({
    ...frontEnd,
    redecider,
    tracking,
    upstreams,
    routes: decisions.routes,
    upstreamCost: costs,
    leakReports: (keys) => { leakReports.submit(keys) },
    // a key about itself (self_service.prefix): the verify API's decisions, the admin actions' writes
    selfService: { verifier, actions: keySelfActions(wing) }
  })
  const adminOptions = { config, logger, health, redis, decisions, metrics, usage, assertions }
  const admin = await buildAdminPlane(adminOptions)
  const ops = config.ops_listen !== undefined ? await buildOpsPlane(adminOptions) : undefined
  const authz = config.authz_listen !== undefined
    ? await buildAuthorizerPlane({ ...frontEnd, upstreamCost: costs, verifier })
    : undefined
  // (gRPC and Envoy's protos are loaded only when the gRPC authorizer is on)
  const authzGrpc = config.authz_grpc_listen !== undefined
    ? await (await import('./authorizer-grpc/grpc-authorizer.js')).buildGrpcAuthorizer({
      ...frontEnd, health
    })
    : undefined
  // first to stop: no new request, and those in flight answered (and counted)
  lifecycle.add({
    name: 'listeners',
    stop: async () => {
      await Promise.allSettled([data.close(), admin.close(), authz?.close(), authzGrpc?.close(), ops?.close()])
    }
  })
  lifecycle.start()

  return {
    data,
    admin,
    authz,
    authzGrpc,
    ops,
    redis,
    health,
    cache: cache.records,
    tracking,
    fills: cache.fills,
    refill: cache.refill,
    metrics,
    usage,
    counter,
    shadowRefusals,
    requests,
    assertions,
    tracing,
    logger,
    lifecycle,
    upstreams,
    reloadUpstreamTls: () => upstreams.reloadTls(),
    webhooks,
    close: async () => { await lifecycle.stop() }
  }
}
