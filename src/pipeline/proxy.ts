/**
 * Stage 8: one protected route prefix -> one upstream, as its own encapsulated
 * fastify context: the gate hook, the body limit and @fastify/http-proxy with its
 * own undici agent. Upstream failures become the catalogue's 502/504 (never an
 * internal address or library code); upstream responses pass through unchanged.
 */
import httpProxy from '@fastify/http-proxy'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import { pipeline } from 'node:stream'
import { Agent } from 'undici'
import type { RouteConfig, UpstreamConfig } from '../config/schema.js'
import { isBodyTooLarge, limitBody } from './body-limit.js'
import { deny } from './deny.js'
import type { RequestHeaderRewriter } from './identity-headers.js'
import { PROXIED_METHODS } from './match-rule.js'

const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']

export interface ProtectedRouteOptions {
  route: RouteConfig
  upstream: UpstreamConfig
  gate: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>
  rewriteRequestHeaders: RequestHeaderRewriter
  bodyLimit: number
}

export async function protectedRoute (ctx: FastifyInstance, o: ProtectedRouteOptions): Promise<void> {
  const agent = new Agent({
    connections: o.upstream.connections,
    connect: { timeout: o.upstream.connect_timeout_ms }
  })
  ctx.addHook('onClose', async () => { await agent.close() })

  ctx.addHook('onRequest', o.gate)

  // Chunked bodies are counted as they stream; a Content-Length was checked by the gate.
  ctx.addHook('preParsing', (request, _reply, payload, done) => {
    if (request.headers['transfer-encoding'] === undefined) return done(null, payload)
    done(null, pipeline(payload, limitBody(o.bodyLimit), () => {}))
  })

  await ctx.register(httpProxy, {
    upstream: o.upstream.url,
    prefix: o.route.prefix === '/' ? '' : o.route.prefix,
    rewritePrefix: o.route.prefix === '/' ? '' : o.route.prefix,
    httpMethods: [...PROXIED_METHODS],
    undici: agent,
    disableRequestLogging: true,
    internalRewriteLocationHeader: false,
    replyOptions: {
      timeout: o.upstream.timeout_ms,
      // the raw query, exactly as the client sent it
      queryString: (_search, _url, request) => request.kg.query.slice(1),
      // (the casts: the gateway serves HTTP/1 only; reply-from's types also allow HTTP/2)
      rewriteRequestHeaders: (request, headers) => o.rewriteRequestHeaders(request as FastifyRequest, headers as IncomingHttpHeaders),
      rewriteHeaders: (headers, request) => {
        // hop-by-hop headers describe the upstream connection, not the client's
        const listed = typeof headers.connection === 'string' ? headers.connection.toLowerCase().split(',') : []
        for (const name of listed) delete headers[name.trim()]
        for (const name of HOP_BY_HOP) delete headers[name]
        if (request !== undefined) headers['x-request-id'] = request.id
        return headers
      },
      // never replay a request: what the upstream answered is what the client gets
      retryDelay: () => null,
      onError: (r, { error }) => {
        const reply = r as FastifyReply
        if (isBodyTooLarge(error)) deny(reply, 'payload_too_large', 'body_too_large')
        else if ((error as { statusCode?: number }).statusCode === 504) deny(reply, 'gateway_timeout', 'upstream_timeout')
        else deny(reply, 'bad_gateway', 'upstream_error')
      }
    }
  })
}
