/**
 * The data plane: everything clients call. Its hooks and routes are registered in the
 * order a request meets the stages, the one list in src/decision/stages.ts (README's
 * "How a request flows" draws it): receive and route prefix are fastify's URL rewrite,
 * hooks and router here; credential to rate limits are the decision
 * (src/decision/decide-request.ts), which the gate (gate.ts) calls before it checks the
 * body; then the headers (src/http/identity-headers.ts), the proxy (proxy.ts) and the
 * log line (src/http/request-log.ts).
 *
 * Every request carries a W3C trace context from receive on (the client's, continued,
 * or a new one): its trace id is on the log line and forwarded upstream, and with
 * tracing.otlp_endpoint set its spans are exported (src/tracing/).
 *
 * The gate is the route's first hook. Every refusal is sent by src/http/deny.ts; what
 * the stages learn about a request is in src/http/request-state.ts.
 *
 * A WebSocket upgrade never reaches fastify's routes: node hands it to the server's
 * 'upgrade' event, where src/websocket/ decides it as a GET (receive to rate limits,
 * the same function), then relays it to the upstream with the identity headers.
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
import { PROXIED_METHODS } from '../http/methods.js'
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
  /** the decision, receive to rate limits, as one function (decide-request.ts), shared with the authorizer */
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
    // receive: the target policy runs before routing, so the router sees the decided path
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

  // receive: a refused request stops here, before routing matters. (Every response
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
  // log: one line per request, and its metrics
  const requestLog = createRequestLog(logger, metrics.requests, config.keys.prefix)
  app.addHook('onResponse', requestLog.hook)
  const finishSpans = tracing.finisher('proxy')
  if (finishSpans !== undefined) app.addHook('onResponse', finishSpans)
  app.addHook('onClose', (_app, done) => { requestLog.flush(); done() })

  // route prefix: a path under none
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

  // each route prefix: the gate (credential to body), then the headers and the proxy to its upstream
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

  // WebSocket upgrades, decided as a GET and relayed (src/websocket/)
  registerWebSockets(app, { config, logger, decider, redecider, tracking, framing, rewriteRequestHeaders, toUpstreams, usage, metrics, tracing })

  await app.ready()
  return app
}
