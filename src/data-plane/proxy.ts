/**
 * The proxy stage: one protected route prefix -> one upstream, as its own encapsulated
 * fastify context: the gate hook, the body limit, and the upstream request on the
 * upstream's dispatcher (upstream-pool/upstreams.ts: an undici pool for one `url`, a
 * pool for `targets`). Upstream failures become the catalogue's 502/504 (never
 * an internal address or library code); upstream responses pass through unchanged.
 *
 * The request goes straight to undici: the path forwarded is the one the target policy
 * (receive) decided, which holds only RFC 3986 pchars, no dot and no empty segment, so
 * it names a path on the upstream's origin as it is (no URL is parsed per request); the
 * query is the client's raw one. Each request is sent once; only an upstream with targets
 * retries one, on another target, when nothing was sent (upstream-pool/pool.ts). Bodies
 * stream both ways: the client's through the body limit (body-limit.ts), the
 * upstream's to the client as it arrives: undici writes it into the client's response
 * itself (its `stream` API, with backpressure; no stream in between), so the proxy
 * writes the response head (the reply's headers, CORS's included) and takes the reply
 * over from fastify (`reply.hijack()`: onSend hooks do not run; onResponse hooks, the
 * log line and the metrics, still do). A client gone mid-answer aborts the upstream
 * request; an upstream failing mid-answer closes the client's connection.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import type { Gate } from './gate.js'
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http'
import type { Readable, Writable } from 'node:stream'
import type { Dispatcher } from 'undici'
import type { RouteConfig, UpstreamConfig } from '../config/schema.js'
import type { UpstreamMeter } from '../metrics/metrics.js'
import type { ToUpstream } from '../tracing/request-trace.js'
import { bodyRefusal, limitBody, refuseBody, type BodyLimits } from './body-limit.js'
import { applyCorsHeaders, type CorsPolicy } from './cors.js'
import { deny } from '../http/deny.js'
import { HOP_BY_HOP, withoutConnectionListed, type RequestHeaderRewriter } from '../http/identity-headers.js'
import { PROXIED_METHODS } from '../http/methods.js'
import type { UpstreamDispatch } from './upstream-pool/upstreams.js'
import { reportedCost, type UpstreamCost } from '../quota/upstream-cost.js'

/**
 * The upstream's response headers as the client gets them: hop-by-hop headers (and any
 * the upstream lists in `Connection`) describe the upstream connection, not the client's;
 * the request id is the gateway's; with CORS on, so are the `Access-Control-*` headers
 * (data-plane/cors.ts); under a rate limit or a quota, so are the `RateLimit-*` and
 * `RateLimit` headers (src/ratelimit/respond.ts, src/quota/respond.ts). The cost an
 * upstream reports (`quota.cost_header`) is the gateway's alone. A new object, so no
 * header object goes through `delete`.
 * (No value needs cleaning for node: undici refuses a response whose header values
 * break HTTP/1.1, and that is a 502.)
 */
function withoutHopByHop (
  headers: IncomingHttpHeaders,
  requestId: string | undefined,
  dropCors: boolean,
  dropRateLimit: boolean,
  costHeader: string | undefined
): IncomingHttpHeaders {
  const connection = headers.connection
  const listed = typeof connection === 'string' && connection !== 'keep-alive' && connection !== 'close'
    ? connection.toLowerCase().split(',').map((n) => n.trim())
    : undefined
  const out: IncomingHttpHeaders = {}
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || (listed !== undefined && listed.includes(name))) continue
    if (dropCors && name.startsWith('access-control-')) continue
    if (dropRateLimit && (name.startsWith('ratelimit-') || name === 'ratelimit')) continue
    if (name === costHeader) continue
    out[name] = headers[name]
  }
  if (requestId !== undefined) out['x-request-id'] = requestId
  return out
}

/** One upstream a route's requests go to: the route's `upstream`, or its `test_upstream` for test keys. */
export interface UpstreamLeg {
  upstream: UpstreamConfig
  /** where its requests go: one origin, or a pool of targets (upstream-pool/) */
  dispatch: UpstreamDispatch
  /** upstream latency (sent -> response headers) and failures by kind */
  meter: UpstreamMeter
  /** the trace context sent upstream, and the upstream call's span (src/tracing/) */
  toUpstream: ToUpstream
}

export interface ProtectedRouteOptions {
  route: RouteConfig
  /** the URLs (and constraint) its handlers are registered under (host-routes.ts) */
  registrations: ReadonlyArray<Pick<RouteOptions, 'url' | 'constraints'>>
  /** where live keys' (and anonymous) requests go */
  live: UpstreamLeg
  /** where test keys' requests go (`test_upstream`); none: a test key never reaches an upstream here */
  test: UpstreamLeg | undefined
  gate: Gate
  rewriteRequestHeaders: RequestHeaderRewriter
  bodyLimits: BodyLimits
  /** set when CORS is on: the upstream's `Access-Control-*` headers are dropped, the gateway's set (cors.ts) */
  cors: CorsPolicy | undefined
  /** `cost: upstream`: the cost header (always removed) and the debit after the response (src/quota/) */
  upstreamCost?: UpstreamCost | undefined
}

export async function protectedRoute (ctx: FastifyInstance, o: ProtectedRouteOptions): Promise<void> {
  ctx.addHook('onRequest', o.gate)

  // Bodies stream to the upstream as they arrive, byte for byte, whatever their type
  // (fastify's own JSON and text parsers would buffer, decode and re-encode them),
  // counted on the way (body-limit.ts). Content-type parsers run only for a request
  // with a body, so a GET pays nothing here.
  const passBody = (
    _request: FastifyRequest,
    payload: NodeJS.ReadableStream,
    done: (err: Error | null, body?: unknown) => void
  ): void => {
    done(null, limitBody(payload as Readable, o.bodyLimits))
  }
  ctx.addContentTypeParser(['application/json', 'text/plain'], passBody)
  ctx.addContentTypeParser('*', passBody)

  // (the origin and the Host header are the dispatcher's: the url's, or the target's)
  const { live, test } = o
  /** a test key's requests go to the test leg only (the environment stage refused them where there is none) */
  const legOf = (request: FastifyRequest): UpstreamLeg | undefined =>
    request.kg.identity?.env === 'test' ? test : live

  /**
   * The upstream answered (its headers): the client gets its status and headers, and
   * the response to write its body into. (One function for every request, the reply
   * carried as undici's `opaque`: no closure per request.)
   */
  function answer (data: Dispatcher.StreamFactoryData<FastifyReply>): Writable {
    const reply = data.opaque
    const request = reply.request
    const kg = request.kg
    const now = performance.now()
    legOf(request)?.meter.response(now - kg.upstreamSentAt)
    kg.upstreamStatus = data.statusCode
    if (kg.trace.client !== undefined) kg.trace.answeredAt = now
    if (request.raw.aborted) {
      // the client went away while the upstream was answering: nothing to send, and
      // the throw aborts the upstream request
      reply.hijack()
      throw new Error('client gone')
    }
    try {
      reply.code(data.statusCode)
    } catch {
      const error = new Error('upstream answered an invalid status')
      failed(reply, error)
      throw error
    }
    const cost = o.upstreamCost
    if (cost !== undefined && kg.upstreamCost !== undefined && kg.identity !== undefined) {
      cost.debit(kg.identity, reportedCost(data.headers[cost.header] as string | string[] | undefined, kg.upstreamCost))
    }
    const head = withoutHopByHop(
      data.headers as IncomingHttpHeaders, request.id, o.cors !== undefined, kg.rateLimited, cost?.header
    )
    // an HTTP/1 connection cannot be reused before its request body was read: the
    // upstream answered first, so the client's connection closes after the answer
    if (!request.raw.complete) head.connection = 'close'
    // the upstream's headers, filtered, are the whole head unless the gateway adds its own:
    // the rate limit's (set on the reply by the gate's verdict, the only data-plane stage
    // before this one that sets any) and CORS's
    let sent = head as OutgoingHttpHeaders
    if (kg.rateLimited || o.cors !== undefined) {
      reply.headers(head)
      if (o.cors !== undefined) applyCorsHeaders(o.cors, request, reply)
      sent = reply.getHeaders() as OutgoingHttpHeaders
    }
    reply.hijack()
    const res = reply.raw
    res.writeHead(reply.statusCode, sent)
    return res
  }

  /** The upstream request ended: failed before its response headers (or the answer was refused). */
  function ended (err: Error | null, data: Dispatcher.StreamData<FastifyReply>): void {
    if (err !== null) failed(data.opaque, err)
  }

  /** The upstream request failed before its response headers. */
  function failed (reply: FastifyReply, error: Error): void {
    if (reply.sent) return
    const refused = bodyRefusal(error)
    if (refused !== undefined) {
      refuseBody(reply, refused)
      return
    }
    legOf(reply.request)?.meter.error(error)
    const code = (error as { code?: unknown }).code
    if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_CONNECT_TIMEOUT') {
      deny(reply, 'gateway_timeout', 'upstream_timeout')
    } else {
      deny(reply, 'bad_gateway', 'upstream_error')
    }
  }

  // (returns nothing: a handler that returns the reply, a thenable, makes fastify wait for the response's
  // end on listeners of its own, for every request)
  const forward = (request: FastifyRequest, reply: FastifyReply): void => {
    // `Expect: 100-continue` (the only expectation the gateway admits): the client
    // is invited to send its body only now, after the gate allowed the request
    if (request.body !== undefined && request.headers.expect !== undefined && request.raw.httpVersionMinor === 1) {
      reply.raw.writeContinue()
    }
    const kg = request.kg
    const leg = legOf(request)
    // (fail closed: never the live upstream for a test key)
    if (leg === undefined) {
      deny(reply, 'forbidden', 'test_key_not_allowed')
      return
    }
    const timeout = leg.upstream.timeout_ms
    kg.upstreamSentAt = performance.now()
    const headers = o.rewriteRequestHeaders(request, withoutConnectionListed(request.headers))
    leg.toUpstream(kg.trace, headers, request.method)
    leg.dispatch.stream({
      // the decided path, or what the route rewrites it to (src/decision/route-rewrite.ts)
      path: kg.query.length > 1 ? (kg.forwardPath ?? kg.path) + kg.query : kg.forwardPath ?? kg.path,
      method: request.method as Dispatcher.HttpMethod,
      headers,
      body: request.body as Readable | undefined,
      headersTimeout: timeout,
      bodyTimeout: timeout,
      opaque: reply
    }, answer, ended)
  }
  // the prefix itself, and everything under it (`<prefix>/*` also matches `<prefix>/`)
  for (const registration of o.registrations) {
    ctx.route({ method: [...PROXIED_METHODS], ...registration, handler: forward })
  }
}
