/**
 * The data plane: everything clients call. Its hooks and routes are registered in
 * the order a request meets them; every stage below is a file of src/decision/, src/cache/,
 * src/http/ or src/data-plane/:
 *
 *    1. receive        framing (header count, Host, HTTP/1.0 framing, Expect) and the
 *                      target policy: origin-form, no dot segments, no encoded `/`...
 *                      400 / 417 / 431                          framing.ts, target-policy.ts
 *    2. route prefix   a path under no configured prefix: 404     route-table.ts
 *    3. credential     exactly one `Authorization: Bearer`: 401   extract-credential.ts
 *    4. key format     prefix, id, secret, checksum, locally: 401 key-format.ts
 *    5. records        key -> user -> role, cache else one Redis
 *                      round trip; Redis down: 503                resolve-identity.ts
 *    6. authenticate   secret, status, expiry, user, org: 401     decide.ts
 *                      (3-6 are one function, shared with the admin sign-in:
 *                      authenticate-request.ts)
 *    7. authorize      the route rule: permissions, org: 403      match-rule.ts, decide.ts
 *    8. rate limits    the key's, its role's and its org's limits:
 *                      429; Redis down: on_error              src/ratelimit/limiter.ts
 *                      (1-8 are one function, shared with the authorizer listener and
 *                      `keygate check`: decide-request.ts)
 *    9. body           a declared body over the limit: 413; a streamed one is
 *                      counted and cut at the limit, or when idle: 413 / 408  body-limit.ts
 *   10. headers        strip, then set the identity headers (and the
 *                      signed assertion, when on)                 identity-headers.ts, assertion/
 *   11. proxy          to the route's upstream: 502 / 504         proxy.ts
 *   12. log            one line and the metrics per request       request-log.ts
 *
 * Every request carries a W3C trace context from stage 1 on (the client's, continued,
 * or a new one): its trace id is on the log line and forwarded upstream, and with
 * tracing.otlp_endpoint set its spans are exported (src/tracing/).
 *
 * Stages 3-9 run in the gate (gate.ts), the route's first hook. Every refusal is sent
 * by deny.ts; what the stages learn about a request is in request-state.ts.
 *
 * A WebSocket upgrade never reaches fastify's routes: node hands it to the server's
 * 'upgrade' event, where src/websocket/ decides it as a GET (stages 1-8, the same
 * function), then relays it to the upstream with the identity headers (10).
 */
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Logger } from 'pino'
import type { Assertions } from '../assertion/assertions.js'
import type { Tracking } from '../cache/invalidation.js'
import type { Config } from '../config/schema.js'
import { codeForStatus } from '../errors.js'
import type { Metrics } from '../metrics/metrics.js'
import type { UsageRecorder } from '../registry/usage-recorder.js'
import type { ToUpstream, Tracing } from '../tracing/tracing.js'
import { bodyRefusal, refuseBody } from './body-limit.js'
import { compileCors, corsHeaders } from './cors.js'
import type { RequestDecider } from '../decision/decide-request.js'
import { deny, refuseFraming } from '../http/deny.js'
import { checkFraming, headLimits, onClientError } from '../http/framing.js'
import { createGate } from './gate.js'
import { createHeaderRewriter } from '../http/identity-headers.js'
import { PROXIED_METHODS } from '../decision/match-rule.js'
import { protectedRoute } from './proxy.js'
import { createRequestLog } from '../http/request-log.js'
import { ROUTER_OPTIONS } from '../decision/route-table.js'
import { loggedTarget, requestState } from '../http/request-state.js'
import { checkTarget, type TargetCheck } from '../decision/target-policy.js'
import { registerWebSockets } from '../websocket/upgrade.js'

const kTarget = Symbol('keygate.target')
type CheckedMessage = IncomingMessage & { [kTarget]?: TargetCheck }

export interface DataPlaneOptions {
  config: Config
  logger: Logger
  /** stages 1-8 as one function (decide-request.ts), shared with the authorizer */
  decider: RequestDecider
  /** the same decision without the rate limits, for open WebSockets (src/websocket/) */
  redecider: RequestDecider
  /** push invalidation, which tells open WebSockets of changes */
  tracking: Tracking
  usage: UsageRecorder
  metrics: Metrics
  /** the signed identity assertion, when identity.assertion is on */
  assertions?: Assertions
  /** the trace context and the spans (src/tracing/) */
  tracing: Tracing
}

export async function buildDataPlane ({ config, logger, decider, redecider, tracking, usage, metrics, assertions, tracing }: DataPlaneOptions): Promise<FastifyInstance> {
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
    routerOptions: ROUTER_OPTIONS,
    http: headLimits(config.limits),
    bodyLimit: config.limits.body_bytes,
    // during a graceful close, requests on open keep-alive connections are still served
    // (fastify's own 503 would not be the gateway's error object)
    return503OnClosing: false,
    clientErrorHandler: onClientError(logger, metrics.requests.refused)
  })
  for (const method of PROXIED_METHODS) {
    if (!app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true })
  }
  app.decorateRequest('kg', null as unknown as never)
  const framing = checkFraming(app.server, config.limits)

  // 1. receive: a refused request stops here, before routing matters. (Every response
  // carries the request id: set by deny() on the gateway's own responses, by the proxy
  // on upstream ones.)
  app.addHook('onRequest', function receive (request, reply, done) {
    const target = (request.raw as CheckedMessage)[kTarget] ?? { ok: false, detail: 'unchecked' }
    const raw = (request.raw as CheckedMessage & { originalUrl?: string }).originalUrl ?? ''
    // (a refused target is logged as received)
    const trace = tracing.receive(request.raw.rawHeaders)
    request.kg = target.ok ? requestState(target.path, target.query, trace) : requestState(loggedTarget(raw), '', trace)
    const overflow = framing.tooManyHeaders(request.raw)
    if (overflow !== undefined) return refuseFraming(reply, overflow)
    if (!target.ok) return deny(reply, 'bad_request', 'bad_path')
    const problem = framing.problem(request.raw)
    if (problem !== undefined) return refuseFraming(reply, problem)
    done()
  })
  // 12. one log line per request, and its metrics
  const requestLog = createRequestLog(logger, metrics.requests, config.keys.prefix)
  app.addHook('onResponse', requestLog.hook)
  const finishSpans = tracing.finisher('proxy')
  if (finishSpans !== undefined) app.addHook('onResponse', finishSpans)
  app.addHook('onClose', (_app, done) => { requestLog.flush(); done() })

  // 2. a path under no route prefix
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

  // 3-11. each route prefix: the gate (3-9), then the headers and the proxy to its upstream (10-11)
  const gate = createGate({
    decider,
    bodyLimit: config.limits.body_bytes,
    usage,
    cors
  })
  const rewriteRequestHeaders = createHeaderRewriter({
    prefix: config.identity.header_prefix,
    forwardAuthorization: config.identity.forward_authorization,
    dropHeaders: config.identity.drop_headers,
    trustedProxies: config.trusted_proxies,
    assertions
  })
  const bodyLimits = { bytes: config.limits.body_bytes, idleMs: config.limits.body_idle_timeout_ms }
  // the trace context sent to each upstream, and its CLIENT span: one per upstream, for
  // the proxied requests and the WebSocket upgrades alike
  const toUpstreams = new Map<string, ToUpstream>()
  for (const [name, upstream] of Object.entries(config.upstreams)) toUpstreams.set(name, tracing.toUpstream(name, upstream.url))
  for (const route of config.routes) {
    const upstream = config.upstreams[route.upstream]
    const toUpstream = toUpstreams.get(route.upstream)
    if (upstream === undefined || toUpstream === undefined) throw new Error(`routes: unknown upstream ${route.upstream}`)
    await app.register(protectedRoute, { route, upstream, gate, rewriteRequestHeaders, bodyLimits, dropCorsHeaders: cors !== undefined, meter: metrics.upstream(route.upstream), toUpstream })
  }

  // 1-8, 10: WebSocket upgrades, decided as a GET and relayed (src/websocket/)
  registerWebSockets(app, { config, logger, decider, redecider, tracking, framing, rewriteRequestHeaders, toUpstreams, usage, metrics, tracing })

  await app.ready()
  return app
}
