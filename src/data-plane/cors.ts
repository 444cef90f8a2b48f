/**
 * CORS for browser clients (`cors:` in the config; off unless origins are listed).
 *
 * Off (the default): OPTIONS is authenticated and rule-checked like any method, and
 * no `Access-Control-*` header is added (docs/security.md).
 *
 * On: the gateway answers preflights itself, before and without authentication (a
 * browser sends no credential with a preflight), and never forwards them:
 *   allowed origin, method and headers  -> 204 with the Access-Control-Allow-* headers
 *   anything else                       -> 403 `forbidden`, with no CORS header
 * Every other response to a request from an allowed origin, the gateway's own errors
 * included (so a browser can read a 401's body), carries `Access-Control-Allow-Origin`
 * and `Vary: Origin`. CORS is the gateway's: `Access-Control-*` headers from the
 * upstream are dropped, so a backend cannot widen what the gateway allows.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Config } from '../config/schema.js'
import { deny } from '../http/deny.js'

export interface CorsPolicy {
  /** exact origins (`https://app.example.com`), or any origin */
  origins: ReadonlySet<string> | 'any'
  methods: ReadonlySet<string>
  /** request headers a preflight may ask for, lower-cased */
  headers: ReadonlySet<string>
  /** the preflight's answer headers, built once */
  allowMethods: string
  allowHeaders: string
  maxAge: string
  exposeHeaders: string
  credentials: boolean
}

/** The policy, or undefined when CORS is off (no origin listed). */
export function compileCors (c: Config['cors']): CorsPolicy | undefined {
  if (c.allowed_origins.length === 0) return undefined
  const methods = c.allowed_methods.map((m) => m.toUpperCase())
  const headers = c.allowed_headers.map((h) => h.toLowerCase())
  return {
    origins: c.allowed_origins.includes('*') ? 'any' : new Set(c.allowed_origins),
    methods: new Set(methods),
    headers: new Set(headers),
    allowMethods: methods.join(', '),
    allowHeaders: headers.join(', '),
    maxAge: String(c.max_age_s),
    exposeHeaders: c.exposed_headers.join(', '),
    credentials: c.allow_credentials
  }
}

function allowedOrigin (policy: CorsPolicy, origin: string | string[] | undefined): string | undefined {
  if (typeof origin !== 'string') return undefined
  if (policy.origins === 'any') return policy.credentials ? origin : '*'
  return policy.origins.has(origin) ? origin : undefined
}

export function isPreflight (request: FastifyRequest): boolean {
  return request.method === 'OPTIONS' && request.headers.origin !== undefined &&
    request.headers['access-control-request-method'] !== undefined
}

/** Answers a preflight: 204 with the CORS headers, or 403. Never authenticated, never forwarded. */
export function answerPreflight (policy: CorsPolicy, request: FastifyRequest, reply: FastifyReply): void {
  const origin = allowedOrigin(policy, request.headers.origin)
  const method = request.headers['access-control-request-method']
  const asked = request.headers['access-control-request-headers']
  const headersOk = typeof asked !== 'string' ||
    asked.split(',').every((h) => h.trim() === '' || policy.headers.has(h.trim().toLowerCase()))
  if (origin === undefined || typeof method !== 'string' || !policy.methods.has(method) || !headersOk) {
    deny(reply, 'forbidden', 'cors_refused')
    return
  }
  request.kg.reason = 'cors_preflight'
  reply.header('access-control-allow-origin', origin)
  reply.header('access-control-allow-methods', policy.allowMethods)
  if (policy.allowHeaders !== '') reply.header('access-control-allow-headers', policy.allowHeaders)
  reply.header('access-control-max-age', policy.maxAge)
  if (policy.credentials) reply.header('access-control-allow-credentials', 'true')
  reply.header('vary', 'Origin, Access-Control-Request-Method, Access-Control-Request-Headers')
  reply.header('x-request-id', request.id)
  reply.code(204).send()
}

/**
 * onSend, for every response of the data plane: a request from an allowed origin gets
 * the gateway's CORS headers (the upstream's were dropped by the proxy, proxy.ts).
 * A proxied response writes its head itself, past onSend: the proxy calls
 * applyCorsHeaders, the same rule.
 */
export function corsHeaders (policy: CorsPolicy) {
  return function onSend (
    request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: null, payload: unknown) => void
  ): void {
    applyCorsHeaders(policy, request, reply)
    done(null, payload)
  }
}

/** The gateway's CORS headers on a response (a preflight's answer is complete as it is). */
export function applyCorsHeaders (policy: CorsPolicy, request: FastifyRequest, reply: FastifyReply): void {
  // (a refused preflight carries no CORS header)
  const reason = request.kg?.reason
  if (reason === 'cors_preflight' || reason === 'cors_refused') return
  const origin = allowedOrigin(policy, request.headers.origin)
  if (origin !== undefined) {
    reply.header('access-control-allow-origin', origin)
    if (policy.exposeHeaders !== '') reply.header('access-control-expose-headers', policy.exposeHeaders)
    if (policy.credentials) reply.header('access-control-allow-credentials', 'true')
  }
  // the answer depends on Origin whenever CORS is on: caches must keep them apart
  const vary = reply.getHeader('vary')
  if (vary === undefined) reply.header('vary', 'Origin')
  else if (!/(^|,)\s*origin\s*(,|$)/i.test(String(vary))) reply.header('vary', `${String(vary)}, Origin`)
}
