/**
 * buildApp(config): the gateway's two planes, ready to listen, never listening.
 * The data plane's plugins and hooks are registered in the order a request meets them.
 */
import Fastify, { type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify'
import { randomUUID } from 'node:crypto'
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import { buildAdminPlane } from './admin/admin-plane.js'
import { InvalidationTracker, NO_TRACKING, type Tracking } from './cache/invalidation.js'
import { cacheNaming, RecordCache } from './cache/record-cache.js'
import { trackingConnections } from './cache/tracking-connection.js'
import type { Config } from './config/schema.js'
import { ERRORS, errorBody, JSON_CONTENT_TYPE, codeForStatus, type ErrorCode, type Reason } from './errors.js'
import { createLogger, sinkOf } from './logger.js'
import { createMetrics, type Metrics, type RequestMeter } from './metrics/metrics.js'
import { bodyRefusal, refuseBody } from './pipeline/body-limit.js'
import { compileCors, corsHeaders } from './pipeline/cors.js'
import { deny } from './pipeline/deny.js'
import { createGate } from './pipeline/gate.js'
import { createHeaderRewriter } from './pipeline/identity-headers.js'
import { compileRules, PROXIED_METHODS } from './pipeline/match-rule.js'
import { protectedRoute } from './pipeline/proxy.js'
import { createRequestLog } from './pipeline/request-log.js'
import './pipeline/request-state.js'
import { IdentityResolver } from './pipeline/resolve-identity.js'
import { UnknownKeyLimit, unknownKeyLimits } from './pipeline/unknown-key-limit.js'
import { checkTarget, type TargetCheck } from './pipeline/target-policy.js'
import { createRedis, RedisHealth, type RegistryClient } from './registry/redis-client.js'
import { redisKeys, type RedisKeys } from './registry/redis-keys.js'
import { RegistryReader } from './registry/registry-reader.js'
import { UsageRecorder } from './registry/usage-recorder.js'

export interface KeygateApp {
  data: FastifyInstance
  admin: FastifyInstance
  redis: RegistryClient
  health: RedisHealth
  cache: RecordCache
  /** push invalidation's state (`up`, `since`, `lostAt`) */
  tracking: Tracking
  /** every metric, served by the admin plane at /metrics */
  metrics: Metrics
  usage: UsageRecorder
  logger: Logger
  close: () => Promise<void>
}

export interface BuildOptions {
  logger?: Logger
}

export async function buildApp (config: Config, opts: BuildOptions = {}): Promise<KeygateApp> {
  const logger = opts.logger ?? createLogger(config.log.level)

  const redis = createRedis(config.redis)
  const health = new RedisHealth(redis)
  health.start()
  const keys = redisKeys(config.redis.prefix)
  // The cache of parsed records, kept current by push invalidation (src/cache/invalidation.ts).
  const cache = new RecordCache(config.cache.max_entries, config.cache.negative_max_entries)
  const tracker = config.cache.enabled && config.cache.tracking ? trackChanges(redis, keys, cache, config, logger) : undefined
  tracker?.start()
  const tracking = tracker ?? NO_TRACKING
  // Every metric (src/metrics/): the stages add to plain counters, read when /metrics is scraped.
  const metrics = createMetrics({
    rules: config.rules,
    upstreams: Object.keys(config.upstreams),
    redis: health,
    cacheStats: () => ({ ...cache.counters, entries: cache.size, trackingUp: tracking.up, trackingSince: tracking.since }),
    logStats: sinkOf(logger)?.stats
  })
  redis.on('error', () => { metrics.redis.connectionError() })
  const resolver = new IdentityResolver({
    reader: new RegistryReader(redis, keys, config.redis.prefix),
    onLookupError: (err) => { metrics.redis.lookupError(err) },
    unknownKeys: new UnknownKeyLimit(unknownKeyLimits(config)),
    cache,
    cacheEnabled: config.cache.enabled,
    tracking,
    health,
    ttlMs: config.cache.ttl_ms,
    negativeTtlMs: config.cache.negative_ttl_ms,
    staleIfErrorMs: config.cache.stale_if_error_s * 1000
  })

  const usage = new UsageRecorder(redis, keys.usage, { keys: config.cache.max_entries })
  const data = await buildDataPlane(config, logger, resolver, usage, metrics)
  const admin = await buildAdminPlane({ config, logger, health, redis, resolver, metrics, usage })

  return {
    data,
    admin,
    redis,
    health,
    cache,
    tracking,
    metrics,
    usage,
    logger,
    async close () {
      await Promise.allSettled([data.close(), admin.close()])
      await usage.stop()
      await tracker?.stop()
      health.stop()
      redis.disconnect()
    }
  }
}

/** Push invalidation of the cache: every write to a key, user or role record, by anyone. */
function trackChanges (redis: RegistryClient, keys: RedisKeys, cache: RecordCache, config: Config, logger: Logger): InvalidationTracker {
  const connections = trackingConnections(redis, keys.keys)
  const tracker = new InvalidationTracker({
    connect: connections.connect,
    ...cacheNaming(keys),
    cache,
    // a silent channel is only trusted for cache.ttl_ms: confirm it twice per TTL
    verifyEveryMs: Math.min(1000, Math.max(50, Math.floor(config.cache.ttl_ms / 2))),
    logger
  })
  connections.watch(() => tracker.node, () => { tracker.reconnect('the registry slot moved') })
  return tracker
}

const kTarget = Symbol('keygate.target')
type CheckedMessage = IncomingMessage & { [kTarget]?: TargetCheck }

async function buildDataPlane (config: Config, logger: Logger, resolver: IdentityResolver, usage: UsageRecorder, metrics: Metrics): Promise<FastifyInstance> {
  // fastify gets no logger: keygate writes the one line per request itself
  // (request-log.ts) and logs its own errors, and fastify's own error lines would
  // carry the request URL with its query string, which must never reach a log.
  const app = Fastify({
    logger: false,
    // request ids are the gateway's own; a client cannot choose what lands in the logs
    requestIdHeader: false,
    genReqId: () => randomUUID(),
    // 1. the target policy runs before routing, so the router sees the decided path
    rewriteUrl (req: CheckedMessage) {
      const target = checkTarget(req.url ?? '')
      req[kTarget] = target
      return target.ok ? target.path + target.query : '/'
    },
    routerOptions: { caseSensitive: true, ignoreTrailingSlash: false, ignoreDuplicateSlashes: false, maxParamLength: 2048 },
    http: {
      maxHeaderSize: config.limits.header_bytes,
      // a request head not complete in time gets 408 (clientErrorHandler); the body has its own idle timeout
      headersTimeout: config.limits.header_timeout_ms,
      connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(config.limits.header_timeout_ms / 4)))
    },
    bodyLimit: config.limits.body_bytes,
    // during a graceful close, requests on open keep-alive connections are still served
    // (fastify's own 503 would not be the gateway's error object)
    return503OnClosing: false,
    clientErrorHandler: clientErrorHandler(logger, metrics.requests)
  })
  for (const method of PROXIED_METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true })
  }
  app.decorateRequest('kg', null as unknown as never)
  // node keeps one field past header_count, so a request over it is seen whole enough to refuse
  app.server.maxHeadersCount = config.limits.header_count + 1
  const maxRawHeaders = config.limits.header_count * 2
  // Requests with `Expect` go through the same hooks as any other (node would answer
  // them itself: `100 Continue` at once, a bare 417 for anything else); the proxy sends
  // `100 Continue` once the gate allowed the request.
  const handleExpect = (req: IncomingMessage, res: ServerResponse): void => { app.server.emit('request', req, res) }
  app.server.on('checkContinue', handleExpect)
  app.server.on('checkExpectation', handleExpect)

  // A refused target stops here, before routing matters. (Every response carries the
  // request id: set by deny() on the gateway's own responses, by the proxy on upstream ones.)
  app.addHook('onRequest', function receive (request, reply, done) {
    const target = (request.raw as CheckedMessage)[kTarget] ?? { ok: false, detail: 'unchecked' }
    const raw = (request.raw as CheckedMessage & { originalUrl?: string }).originalUrl ?? ''
    request.kg = {
      // a refused target is logged as received (JSON-escaped by pino), query cut off, bounded
      path: target.ok ? target.path : (raw.split('?', 1)[0] as string).slice(0, 1024),
      query: target.ok ? target.query : '',
      keyId: undefined,
      identity: undefined,
      reason: undefined,
      rule: undefined,
      upstreamSentAt: 0
    }
    // more fields than header_count: whatever comes after the ones a parser keeps could
    // frame the body or carry a header the upstream relies on, unseen
    if (request.raw.rawHeaders.length > maxRawHeaders) return closing(reply, 'header_too_large', 'header_too_large')
    if (!target.ok) return deny(reply, 'bad_request', 'bad_path')
    if (countHeader(request.raw.rawHeaders, 'host') > 1) return deny(reply, 'bad_request', 'bad_request')
    // HTTP/1.0 has no transfer codings: a peer could frame this message differently (RFC 9112 6.1)
    if (request.raw.httpVersionMinor === 0 && request.headers['transfer-encoding'] !== undefined) return closing(reply, 'bad_request', 'bad_request')
    const expect = request.headers.expect
    if (expect !== undefined && expect.toLowerCase() !== '100-continue') return closing(reply, 'expectation_failed', 'expectation_failed')
    done()
  })
  // The last stage: one log line per request, and its metrics.
  const requestLog = createRequestLog(logger, metrics.requests, config.keys.prefix)
  app.addHook('onResponse', requestLog.hook)
  app.addHook('onClose', (_app, done) => { requestLog.flush(); done() })

  // 1b. a path under no route prefix
  app.setNotFoundHandler((_request, reply) => deny(reply, 'not_found', 'no_route'))
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const refused = bodyRefusal(err)
    if (refused !== undefined) return refuseBody(reply, refused)
    const status = err.statusCode ?? 500
    if (status >= 400 && status < 500) return deny(reply, codeForStatus(status), 'bad_request')
    logger.error({ req_id: request.id, err: { type: err.name, message: err.message, stack: err.stack } }, 'internal error')
    return deny(reply, 'internal_error', 'internal_error')
  })

  // CORS (off unless origins are configured): preflights in the gate, headers on every response
  const cors = compileCors(config.cors)
  if (cors !== undefined) app.addHook('onSend', corsHeaders(cors))

  // 2-8. each route prefix: gate, then proxy to its upstream
  const gate = createGate({
    keyPrefix: config.keys.prefix,
    resolver,
    matchRule: compileRules(config.rules),
    bodyLimit: config.limits.body_bytes,
    usage,
    meter: metrics.auth,
    cors
  })
  const rewriteRequestHeaders = createHeaderRewriter({
    prefix: config.identity.header_prefix,
    forwardAuthorization: config.identity.forward_authorization,
    dropHeaders: config.identity.drop_headers,
    trustedProxies: config.trusted_proxies
  })
  const bodyLimits = { bytes: config.limits.body_bytes, idleMs: config.limits.body_idle_timeout_ms }
  for (const route of config.routes) {
    const upstream = config.upstreams[route.upstream]
    if (upstream === undefined) throw new Error(`routes: unknown upstream ${route.upstream}`)
    await app.register(protectedRoute, { route, upstream, gate, rewriteRequestHeaders, bodyLimits, dropCorsHeaders: cors !== undefined, meter: metrics.upstream(route.upstream) })
  }

  await app.ready()
  return app
}

/** A refusal after which the connection closes: the rest of the message is not read. */
function closing (reply: FastifyReply, code: ErrorCode, reason: Reason): FastifyReply {
  reply.header('connection', 'close')
  return deny(reply, code, reason)
}

function countHeader (rawHeaders: readonly string[], lowerName: string): number {
  let n = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length === lowerName.length && name.toLowerCase() === lowerName) n++
  }
  return n
}

/** Errors node's HTTP parser raises before fastify sees a request: answered on the raw socket. */
function clientErrorHandler (logger: Logger, meter: RequestMeter) {
  return function onClientError (err: Error & { code?: string }, socket: Socket): void {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    let code: ErrorCode = 'bad_request'
    let reason: Reason = 'bad_request'
    if (err.code === 'HPE_HEADER_OVERFLOW') { code = 'header_too_large'; reason = 'header_too_large' }
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') { code = 'request_timeout'; reason = 'request_timeout' }
    const { status } = ERRORS[code]
    const body = errorBody(code)
    const id = randomUUID()
    logger.info({ req_id: id, status, reason, detail: err.code }, 'request')
    meter.refused(status, reason)
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
      `Content-Type: ${JSON_CONTENT_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${id}\r\n` +
      'Connection: close\r\n\r\n' + body
    )
  }
}
