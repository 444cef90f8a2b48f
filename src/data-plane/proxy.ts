/**
 * The proxy stage: one protected route prefix -> one upstream, as its own encapsulated
 * fastify context: the gate hook, the body limit, and @fastify/reply-from with its
 * own undici agent. Upstream failures become the catalogue's 502/504 (never an
 * internal address or library code); upstream responses pass through unchanged.
 *
 * reply-from is the engine of @fastify/http-proxy, used here without http-proxy's
 * route handler, which parses the path with WHATWG URL three times a request to
 * re-check what the target policy (receive) already guarantees (~50k instructions a
 * request; docs/benchmarks.md). reply-from still checks the URL it builds: no `..`
 * segment, and the upstream's origin.
 */
import replyFrom, { type FastifyReplyFromHooks } from '@fastify/reply-from'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Gate } from './gate.js'
import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import { Agent } from 'undici'
import type { RouteConfig, UpstreamConfig } from '../config/schema.js'
import type { UpstreamMeter } from '../metrics/metrics.js'
import type { ToUpstream } from '../tracing/tracing.js'
import { bodyRefusal, limitBody, refuseBody, type BodyLimits } from './body-limit.js'
import { deny } from '../http/deny.js'
import { HOP_BY_HOP, type RequestHeaderRewriter } from '../http/identity-headers.js'
import { PROXIED_METHODS } from '../http/methods.js'
import { routePatterns } from '../decision/route-table.js'

/**
 * The upstream's response headers as the client gets them: hop-by-hop headers (and any
 * the upstream lists in `Connection`) describe the upstream connection, not the client's;
 * the request id is the gateway's; with CORS on, so are the `Access-Control-*` headers
 * (data-plane/cors.ts); under a rate limit, so are the `RateLimit-*` headers
 * (src/ratelimit/respond.ts). A new object, so no header object goes through `delete`.
 * (No value needs cleaning for node: undici refuses a response whose header values
 * break HTTP/1.1, and that is a 502.)
 */
function withoutHopByHop (headers: IncomingHttpHeaders, requestId: string | undefined, dropCors: boolean, dropRateLimit: boolean): IncomingHttpHeaders {
  const connection = headers.connection
  const listed = typeof connection === 'string' && connection !== 'keep-alive' && connection !== 'close'
    ? connection.toLowerCase().split(',').map((n) => n.trim())
    : undefined
  const out: IncomingHttpHeaders = {}
  for (const name in headers) {
    if (HOP_BY_HOP.has(name) || (listed !== undefined && listed.includes(name))) continue
    if (dropCors && name.startsWith('access-control-')) continue
    if (dropRateLimit && name.startsWith('ratelimit-')) continue
    out[name] = headers[name]
  }
  if (requestId !== undefined) out['x-request-id'] = requestId
  return out
}

export interface ProtectedRouteOptions {
  route: RouteConfig
  upstream: UpstreamConfig
  gate: Gate
  rewriteRequestHeaders: RequestHeaderRewriter
  bodyLimits: BodyLimits
  /** CORS is on: the upstream's `Access-Control-*` headers are dropped (the gateway sets its own) */
  dropCorsHeaders: boolean
  /** upstream latency (sent -> response headers) and failures by kind */
  meter: UpstreamMeter
  /** the trace context sent upstream, and the upstream call's span (src/tracing/) */
  toUpstream: ToUpstream
}

export async function protectedRoute (ctx: FastifyInstance, o: ProtectedRouteOptions): Promise<void> {
  const agent = new Agent({
    connections: o.upstream.connections,
    connect: { timeout: o.upstream.connect_timeout_ms }
  })
  ctx.addHook('onClose', async () => { await agent.close() })

  ctx.addHook('onRequest', o.gate)

  // Bodies stream to the upstream as they arrive, byte for byte, whatever their type
  // (fastify's own JSON and text parsers would buffer, decode and re-encode them),
  // counted on the way (body-limit.ts). Content-type parsers run only for a request
  // with a body, so a GET pays nothing here.
  const passBody = (_request: FastifyRequest, payload: NodeJS.ReadableStream, done: (err: Error | null, body?: unknown) => void): void => {
    done(null, limitBody(payload as Readable, o.bodyLimits))
  }
  ctx.addContentTypeParser(['application/json', 'text/plain'], passBody)
  ctx.addContentTypeParser('*', passBody)

  // The upstream request: the path forwarded is the one the target policy decided and
  // the rules matched, with the client's raw query.
  await ctx.register(replyFrom, {
    base: o.upstream.url,
    undici: agent,
    disableRequestLogging: true
  })
  const replyOptions: FastifyReplyFromHooks & { timeout: number } = {
    timeout: o.upstream.timeout_ms,
    // the raw query, exactly as the client sent it
    queryString: (_search, _url, request) => request.kg.query.slice(1),
    // (the casts: the gateway serves HTTP/1 only; reply-from's types also allow HTTP/2)
    // (reply-from calls this just before it sends the request, and rewriteHeaders when the response headers arrive)
    rewriteRequestHeaders: (request, headers) => {
      const kg = (request as FastifyRequest).kg
      kg.upstreamSentAt = performance.now()
      const out = o.rewriteRequestHeaders(request as FastifyRequest, headers as IncomingHttpHeaders)
      o.toUpstream(kg.trace, out, request.method)
      return out
    },
    rewriteHeaders: (headers, request) => {
      if (request !== undefined) {
        const kg = (request as FastifyRequest).kg
        const now = performance.now()
        o.meter.response(now - kg.upstreamSentAt)
        if (kg.trace.client !== undefined) kg.trace.answeredAt = now
      }
      return withoutHopByHop(headers as IncomingHttpHeaders, request?.id, o.dropCorsHeaders, (request as FastifyRequest | undefined)?.kg.rateLimited === true)
    },
    // never replay a request: what the upstream answered is what the client gets
    retryDelay: () => null,
    onError: (r, { error }) => {
      const reply = r as FastifyReply
      const refused = bodyRefusal(error)
      if (refused !== undefined) {
        refuseBody(reply, refused)
        return
      }
      o.meter.error(error)
      if ((error as { statusCode?: number }).statusCode === 504) deny(reply, 'gateway_timeout', 'upstream_timeout')
      else deny(reply, 'bad_gateway', 'upstream_error')
    }
  }
  const forward = (request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    // `Expect: 100-continue` (the only expectation the gateway admits): the client
    // is invited to send its body only now, after the gate allowed the request
    if (request.body !== undefined && request.headers.expect !== undefined && request.raw.httpVersionMinor === 1) reply.raw.writeContinue()
    return reply.from(request.kg.path, replyOptions)
  }
  // the prefix itself, and everything under it (`<prefix>/*` also matches `<prefix>/`)
  for (const url of routePatterns(o.route.prefix)) {
    ctx.route({ method: [...PROXIED_METHODS], url, handler: forward })
  }
}
