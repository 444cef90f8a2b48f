/**
 * The authorizer listener (`authz_listen`; off unless set): forward auth for a proxy
 * that forwards by itself (nginx `auth_request`, Traefik `ForwardAuth`, Envoy
 * `ext_authz`). Each request is a question about an original request: may it pass?
 * docs/authorizer.md has each proxy's configuration.
 *
 *   1. receive        framing, as on every listener: 400 / 417 / 431     framing.ts
 *   2. the peer       only authz.trusted_peers may ask: 403
 *   3. the original   authz.proxy's way of naming it: the proxy's headers or Envoy's
 *                     own target; two ways at once with `auto`: 400 / 404  original-request.ts
 *   4. the decision   receive to rate limits, the data plane's very same function with the
 *                     same cache and rate limits: 400 / 404 / 401 / 503 / 403 / 429
 *                                                                          decide-request.ts
 *   5. the answer     allowed: 200, empty, the identity headers (and the assertion),
 *                     and for Envoy the request headers to remove (the key, and the
 *                     identity headers this answer does not set)        allowed-answer.ts;
 *                     refused: the data plane's status, error object and challenge;
 *                     RateLimit-* (and Retry-After) when a rate limit applies
 *   6. log            one line (`mode: "authz"`) and the metrics          request-log.ts
 *
 * Every decision carries a W3C trace context (the original request's `traceparent`,
 * continued, or a new one): its trace id is on the log line, an allowed answer carries
 * the `traceparent` (and `tracestate`) for the proxy to forward, whose parent is the
 * decision, and with tracing.otlp_endpoint set the decision is a span (src/tracing/).
 *
 * Everything is answered in the first hook: a decision request's body, if any, is
 * never read (the connection is closed after the answer instead).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingMessage } from 'node:http'
import type { Logger } from 'pino'
import type { Config } from '../config/schema.js'
import { JWKS_PATH, sendJwks, type Assertions } from '../assertion/index.js'
import { sendError } from '../errors.js'
import type { Metrics } from '../metrics/metrics.js'
import type { UsageRecorder } from '../usage/last-used.js'
import type { UsageCounter } from '../usage/counter.js'
import type { KeyRequests } from '../usage/key-requests.js'
import type { Tracing } from '../tracing/request-trace.js'
import type { RequestDecider, TargetVerdict } from '../decision/decide-request.js'
import { challenges } from '../decision/challenges.js'
import { deny, refuseFraming } from '../http/deny.js'
import { applyVerdict } from '../http/verdict.js'
import type { UpstreamCost } from '../quota/upstream-cost.js'
import { createListener } from '../http/listener.js'
import { connectionPeer, reportedClient } from '../http/peers.js'
import { PROXIED_METHODS } from '../http/methods.js'
import { routePatterns } from '../decision/route-table.js'
import { loggedTarget, requestState } from '../http/request-state.js'
import { allowedAnswer } from './allowed-answer.js'
import { namesOriginal, originalRequest } from './original-request.js'
import { VERIFY_PATH, type KeyVerifier } from '../decision/verify-key.js'
import { decideCaller, verifyRoute } from './verify-route.js'

export interface AuthorizerPlaneOptions {
  config: Config
  logger: Logger
  decider: RequestDecider
  usage: UsageRecorder
  /** each key's request counts (src/usage/counter.ts) */
  counter?: UsageCounter
  /** each key's last decisions (src/usage/key-requests.ts) */
  requests?: KeyRequests | undefined
  metrics: Metrics
  /** the signed identity assertion, when identity.assertion is on (src/assertion/) */
  assertions?: Assertions | undefined
  /** the trace context and the spans (src/tracing/) */
  tracing: Tracing
  /**
   * `cost: upstream` (src/quota/upstream-cost.ts): the authorizer never sees the upstream's response, so such a
   * request is debited its rule's `default_cost` once allowed
   */
  upstreamCost?: UpstreamCost | undefined
  /** `POST /v1/verify` (verify-route.ts): the caller and the key, decided through the same cache */
  verifier?: KeyVerifier | undefined
}

const kTarget = Symbol('keygate.authz.target')
const kVerify = Symbol('keygate.authz.verify')
type Stashed = IncomingMessage & { [kTarget]?: string, [kVerify]?: boolean }

export async function buildAuthorizerPlane (o: AuthorizerPlaneOptions): Promise<FastifyInstance> {
  const { config, logger, decider, usage, assertions, tracing } = o
  // the verify API, unless Envoy asks about every path with none of its own (its original
  // request could then be POST /v1/verify itself)
  const verifier = config.authz.proxy === 'envoy' && config.authz.path_prefix === '' ? undefined : o.verifier
  const { app, framing } = createListener({
    logger,
    limits: config.limits,
    refused: o.metrics.decisions.refused,
    allMethods: true,
    fastify: {
      // every decision request is answered by one hook, whatever its own target
      rewriteUrl (req: Stashed) {
        req[kTarget] = req.url ?? ''
        // the verify API: its own route, whose body is read (never a request that names an original)
        const asksVerify = req.method === 'POST' && req.url === VERIFY_PATH && !namesOriginal(req.rawHeaders)
        if (verifier !== undefined && asksVerify) {
          req[kVerify] = true
          return VERIFY_PATH
        }
        return '/'
      },
      return503OnClosing: false
    },
    // 6. one log line per decision, and its metrics
    log: {
      meter: o.metrics.decisions,
      keys: config.keys,
      mode: 'authz',
      usage: o.counter,
      requests: o.requests,
      allowedSampleRatio: config.log.allowed_sample_ratio
    },
    tracing: { tracing, mode: 'authz' }
  })
  const peerOf = connectionPeer(config.authz.trusted_peers)
  const pathPrefix = config.authz.path_prefix
  const proxy = config.authz.proxy
  // the allowed answer (Envoy removes the headers it names; other proxies ignore that header)
  const writeAllowed = allowedAnswer({ headerPrefix: config.identity.header_prefix, assertions, tracing })
  const byHost = config.routes.some((r) => r.hosts !== undefined)
  // each route's name for the span (`<prefix>/*`)
  const routeNames = new Map(config.routes.map((r) => [r.prefix, routePatterns(r.prefix)[1]]))

  app.addHook('onRequest', function decision (request, reply, done) {
    const raw = request.raw as Stashed
    const own = raw[kTarget] ?? ''
    request.kg = requestState(loggedTarget(own), '', tracing.receive(raw.rawHeaders))
    // the peer, and the client a trusted peer reports: worked out once, for the log line
    // and the unknown-key budget alike
    const connection = peerOf(raw.socket)
    const client = reportedClient(connection, raw.rawHeaders)
    request.kg.clientIp = client
    // the verify API: framing, then its caller (verify-route.ts); any peer may call it with a key
    if (raw[kVerify] === true) {
      const problem = framing.problem(raw)
      if (problem !== undefined) return refuseFraming(reply, problem)
      if (verifier === undefined) return deny(reply, 'not_found', 'no_route')
      return decideCaller(verifier, request, reply, done)
    }
    // a body is never read: the connection closes after the answer
    if (hasBody(raw)) reply.header('connection', 'close')

    // 1. framing
    const problem = framing.problem(raw)
    if (problem !== undefined) return refuseFraming(reply, problem)
    const headers = raw.rawHeaders

    // (the public keys of the assertion, for upstreams: not a decision)
    if (assertions !== undefined && request.method === 'GET' && own === JWKS_PATH && !namesOriginal(headers)) {
      request.kg.reason = 'allowed'
      return sendJwks(reply.header('x-request-id', request.id), assertions)
    }

    // 2. only a trusted proxy may ask
    if (!connection.trusted) return deny(reply, 'forbidden', 'untrusted_peer', challenges.insufficientScope())

    // 3. the original request
    const original = originalRequest(headers, request.method, own, pathPrefix, proxy)
    if (!original.ok) {
      if (original.problem === 'ambiguous') request.kg.via = 'ambiguous'
      return original.problem === 'outside_path_prefix'
        ? deny(reply, 'not_found', 'no_route')
        : deny(reply, 'bad_request', 'bad_request')
    }
    request.kg.via = original.via
    request.kg.method = original.method
    request.kg.path = loggedTarget(original.target)

    // 4. the decision, as the data plane takes it; the original Host picks routes with `hosts`
    const now = Date.now()
    const host = byHost ? originalHost(raw) : undefined
    const verdict = decider.decideTarget(original.method, original.target, headers, client, now, host)
    if (!(verdict instanceof Promise)) return answer(request, reply, verdict, now, original.target)
    verdict.then(
      (v) => { answer(request, reply, v, Date.now(), original.target) },
      (err: unknown) => { done(err instanceof Error ? err : new Error(String(err))) }
    )
  })
  if (verifier !== undefined) await app.register(verifyRoute, { verifier, usage, counter: o.counter })
  // never reached: the hook above answers every request
  app.route({
    method: PROXIED_METHODS as string[],
    url: '/',
    handler: async (_request, reply) => sendError(reply, 'internal_error')
  })

  // 5. the answer
  function answer (
    request: FastifyRequest,
    reply: FastifyReply,
    v: TargetVerdict,
    now: number,
    originalTarget: string
  ): FastifyReply {
    const state = request.kg
    if (v.target !== undefined) {
      state.path = v.target.path
      state.trace.route = routeNames.get(v.target.route.prefix)
    }
    if (!applyVerdict(reply, v)) return reply
    const identity = v.identity
    if (identity === undefined) state.reason = 'public'
    else {
      state.reason = 'allowed'
      usage.record(identity.keyId, now)
      if (state.upstreamCost !== undefined) o.upstreamCost?.debit(identity, state.upstreamCost)
    }
    // (the route's key header travels no further either)
    const keyHeader = v.target?.route.keyHeader
    const allowed = writeAllowed(
      identity,
      request.id,
      state.trace,
      state.method ?? request.method,
      originalTarget,
      now,
      keyHeader
    )
    reply.code(allowed.status).headers(allowed.headers)
    reply.header('x-envoy-auth-headers-to-remove', allowed.remove.list)
    return reply.send()
  }

  if (assertions !== undefined && pathPrefix === '') {
    logger.warn(
      { path: JWKS_PATH },
      `authz: with authz.path_prefix empty, ${JWKS_PATH} on the authorizer listener answers the JWK Set, ` +
      'which an Envoy ext_authz filter would take as "allowed" for that path; set authz.path_prefix for Envoy'
    )
  }
  await app.ready()
  return app
}

/**
 * The original request's Host: the proxy's `X-Forwarded-Host` (Traefik; nginx as docs/authorizer.md sets it),
 * else `Host`.
 */
function originalHost (req: IncomingMessage): string | undefined {
  const forwarded = req.headers['x-forwarded-host']
  return typeof forwarded === 'string' ? forwarded : req.headers.host
}

function hasBody (req: IncomingMessage): boolean {
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}
