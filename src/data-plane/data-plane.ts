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
import type { FastifyInstance } from 'fastify'
import type { IncomingMessage } from 'node:http'
import type { Logger } from 'pino'
import type { Assertions } from '../assertion/assertions.js'
import type { Tracking } from '../cache/tracking.js'
import type { Config } from '../config/schema.js'
import type { Metrics } from '../metrics/metrics.js'
import type { UsageRecorder } from '../usage/last-used.js'
import type { UsageCounter } from '../usage/counter.js'
import type { KeyRequests } from '../usage/key-requests.js'
import type { ToUpstream, Tracing } from '../tracing/request-trace.js'
import { bodyRefusal, refuseBody } from './body-limit.js'
import { compileCors, corsHeaders } from './cors.js'
import type { RequestDecider } from '../decision/decide-request.js'
import { deny, refuseFraming } from '../http/deny.js'
import { createListener } from '../http/listener.js'
import { createGate } from './gate.js'
import { leakReportRoute, type LeakReporter } from './leak-reports.js'
import { parseRateLimit } from '../config/rate-limit.js'
import { anonymousLimit } from '../ratelimit/anonymous.js'
import { createHeaderRewriter, type RequestHeaderRewriter } from '../http/identity-headers.js'
import { clientAddressOf } from '../http/peers.js'
import type { Route, RouteTable } from '../decision/route-table.js'
import { chooseRoute, routeConstraint, routeRegistrations } from './host-routes.js'
import { protectedRoute, type UpstreamLeg } from './proxy.js'
import { ROUTER_OPTIONS } from '../decision/route-table.js'
import { loggedTarget, requestState } from '../http/request-state.js'
import { checkTarget, type TargetCheck } from '../decision/target-policy.js'
import { registerWebSockets } from '../websocket/upgrade.js'
import { spanOrigin, type Upstreams } from './upstream-pool/upstreams.js'
import type { UpstreamCost } from '../quota/upstream-cost.js'
import { keyPrefixesOf } from '../registry/key-format.js'
import type { KeyVerifier } from '../decision/verify-key.js'
import { selfServiceRoutes, type SelfServiceActions } from './self-service.js'

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
  /** each key's request counts (src/usage/counter.ts) */
  counter?: UsageCounter
  /** each key's last decisions (src/usage/key-requests.ts) */
  requests?: KeyRequests
  metrics: Metrics
  /** the signed identity assertion, when identity.assertion is on */
  assertions?: Assertions
  /** the trace context and the spans (src/tracing/) */
  tracing: Tracing
  /** every upstream's dispatcher: one origin, or a pool of targets (upstream-pool/) */
  upstreams: Upstreams
  /** the routes, compiled (src/decision/route-table.ts) */
  routes: RouteTable
  /** `cost: upstream`: the cost header and its debit (src/quota/upstream-cost.ts) */
  upstreamCost?: UpstreamCost | undefined
  /** anyone's leak reports (`POST /_keygate/v1/leaked`, leak-reports.ts), when `leaks.public.enabled` */
  leakReports?: LeakReporter
  /** a key about itself under self_service.prefix (self-service.ts), when self_service.enabled */
  selfService?: { verifier: KeyVerifier, actions: SelfServiceActions }
}

export async function buildDataPlane ({
  config, logger, decider, redecider, tracking, usage, counter, requests, metrics, assertions, tracing, upstreams,
  routes, upstreamCost,
  leakReports,
  selfService
}: DataPlaneOptions): Promise<FastifyInstance> {
  // routes with hosts: the table picks the route in the URL rewrite (host-routes.ts)
  const byHost = routes.byHost
  const routeIds = routes.routes.map((r) => String(r.index))
  // (the shared listener: src/http/listener.ts; a path under no route prefix is its 404)
  const { app, framing } = createListener({
    logger,
    limits: config.limits,
    refused: metrics.requests.refused,
    allMethods: true,
    fastify: {
      // receive: the target policy runs before routing, so the router sees the decided path
      rewriteUrl (req: CheckedMessage) {
        const target = checkTarget(req.url ?? '')
        req[kTarget] = target
        if (byHost && target.ok) chooseRoute(routes, routeIds, req, target.path)
        return target.ok ? target.path + target.query : '/'
      },
      routerOptions: ROUTER_OPTIONS,
      bodyLimit: config.limits.body_bytes,
      // during a graceful close, requests on open keep-alive connections are still served
      // (fastify's own 503 would not be the gateway's error object)
      return503OnClosing: false
    },
    // log: one line per request, and its metrics
    log: {
      meter: metrics.requests,
      keys: config.keys,
      mode: 'proxy',
      usage: counter,
      requests,
      allowedSampleRatio: config.log.allowed_sample_ratio
    },
    tracing: { tracing, mode: 'proxy' },
    // body: a refusal of its own
    ownRefusal (err, reply) {
      const refused = bodyRefusal(err)
      return refused === undefined ? undefined : refuseBody(reply, refused)
    }
  })

  const clientAddress = clientAddressOf(config.trusted_proxies)

  // receive: a refused request stops here, before routing matters. (Every response
  // carries the request id: set by deny() on the gateway's own responses, by the proxy
  // on upstream ones.)
  app.addHook('onRequest', function receive (request, reply, done) {
    const target = (request.raw as CheckedMessage)[kTarget] ?? { ok: false, detail: 'unchecked' }
    const raw = (request.raw as CheckedMessage & { originalUrl?: string }).originalUrl ?? ''
    // (a refused target is logged as received)
    const trace = tracing.receive(request.raw.rawHeaders)
    request.kg = target.ok ? requestState(target.path, target.query, trace) : requestState(loggedTarget(raw), '', trace)
    request.kg.clientIp = clientAddress(request.raw.socket, request.raw.rawHeaders)
    const overflow = framing.tooManyHeaders(request.raw)
    if (overflow !== undefined) return refuseFraming(reply, overflow)
    if (!target.ok) return deny(reply, 'bad_request', 'bad_path')
    const problem = framing.problem(request.raw)
    if (problem !== undefined) return refuseFraming(reply, problem)
    done()
  })
  // CORS (off unless origins are configured): preflights in the gate, headers on every response
  const cors = compileCors(config.cors)
  if (cors !== undefined) app.addHook('onSend', corsHeaders(cors))

  // anyone's leak reports: a path of the gateway's own, before every route's (leak-reports.ts)
  const reportsPerAddress = parseRateLimit(config.leaks.public.per_address)
  if (leakReports !== undefined && config.leaks.public.enabled && reportsPerAddress !== undefined) {
    await app.register(leakReportRoute, {
      limit: anonymousLimit(reportsPerAddress),
      report: leakReports,
      keyPrefix: keyPrefixesOf(config.keys),
      idleMs: config.limits.body_idle_timeout_ms
    })
  }

  // a key about itself: the gateway's own paths, never forwarded (self-service.ts)
  if (selfService !== undefined && config.self_service.enabled) {
    await app.register(selfServiceRoutes, { pathPrefix: config.self_service.prefix, usage, ...selfService })
  }

  // each route: the gate (credential to body), then the headers and the proxy to its upstream
  if (byHost) app.addConstraintStrategy(routeConstraint)
  // one header rewriter per key header (none: the one most routes share)
  const rewriters = new Map<string | undefined, RequestHeaderRewriter>()
  const rewriterOf = (route: Route): RequestHeaderRewriter => {
    let rewriter = rewriters.get(route.keyHeader)
    if (rewriter === undefined) {
      rewriter = createHeaderRewriter({
        prefix: config.identity.header_prefix,
        forwardAuthorization: config.identity.forward_authorization,
        dropHeaders: config.identity.drop_headers,
        keyHeader: route.keyHeader,
        trustedProxies: config.trusted_proxies,
        assertions
      })
      rewriters.set(route.keyHeader, rewriter)
    }
    return rewriter
  }
  const bodyLimits = { bytes: config.limits.body_bytes, idleMs: config.limits.body_idle_timeout_ms }
  // the trace context sent to each upstream, and its CLIENT span: one per upstream, for
  // the proxied requests and the WebSocket upgrades alike
  const toUpstreams = new Map<string, ToUpstream>()
  for (const [name, upstream] of Object.entries(config.upstreams)) {
    toUpstreams.set(name, tracing.toUpstream(name, spanOrigin(upstream)))
  }
  const legOf = (name: string): UpstreamLeg => {
    const upstream = config.upstreams[name]
    const toUpstream = toUpstreams.get(name)
    if (upstream === undefined || toUpstream === undefined) throw new Error(`routes: unknown upstream ${name}`)
    return { upstream, dispatch: upstreams.get(name), meter: metrics.upstream(name), toUpstream }
  }
  for (const route of routes.routes) {
    const gate = createGate({ decider, route, bodyLimit: config.limits.body_bytes, usage, cors, costs: upstreamCost })
    await app.register(protectedRoute, {
      route,
      registrations: routeRegistrations(route, byHost),
      live: legOf(route.upstream),
      test: route.test_upstream === undefined ? undefined : legOf(route.test_upstream),
      gate,
      rewriteRequestHeaders: rewriterOf(route),
      bodyLimits,
      cors,
      upstreamCost
    })
  }

  // WebSocket upgrades, decided as a GET and relayed (src/websocket/)
  registerWebSockets(app, {
    config,
    logger,
    decider,
    redecider,
    tracking,
    framing,
    rewriterOf,
    toUpstreams,
    upstreams,
    usage,
    counter,
    requests,
    metrics,
    tracing
  })

  await app.ready()
  return app
}
