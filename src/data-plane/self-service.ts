/**
 * A key about itself, on the data plane under `self_service.prefix` (default
 * `/_keygate/v1`, docs/self-service.md); never forwarded, and no route may claim the
 * prefix (config/routes.ts):
 *
 *   GET  <prefix>/key          who the key is: id, type, org, role, scope, effective
 *                              permissions, expiry, its rate limit and quota state
 *   GET  <prefix>/key/usage    its request counts, the last 24 h by hour (docs/usage.md)
 *   POST <prefix>/key/revoke   revokes it: a key may always revoke itself
 *   POST <prefix>/key/rotate   `{"grace":"24h"}` optional: a new key, shown once; the old
 *                              one works for the grace. Needs `keygate:keys:self` in the
 *                              key's grants
 *
 * Each is a request of that key: authenticated through the gateway's decision and cache,
 * held to the key's addresses and rate limits (401 / 403 / 429 / 503,
 * src/decision/verify-key.ts), logged and counted like any other. Any other path under
 * the prefix is 404, answered here. The writes are the admin actions' own (the revoke and
 * the rotation of the admin API, audited with the key as the actor), handed in by
 * src/app.ts: the data plane never imports the admin wing.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { parseDuration } from '../config/duration.js'
import { ERRORS, JSON_CONTENT_TYPE, sendError } from '../errors.js'
import type { Allowed, Verdict } from '../decision/verdict.js'
import type { KeyVerifier } from '../decision/verify-key.js'
import type { Identity } from '../decision/identity.js'
import { challenges } from '../decision/challenges.js'
import { applyVerdict } from '../http/verdict.js'
import { deny } from '../http/deny.js'
import type { UsageRecorder } from '../usage/last-used.js'

/** what a key needs in its grants to rotate itself (by name: no wildcard grants it) */
export const SELF_PERMISSION = 'keygate:keys:self'
/** the longest grace a key gives itself */
const MAX_GRACE_MS = 30 * 86_400_000
const DEFAULT_GRACE_MS = 24 * 3_600_000

/** The admin actions a key takes on itself, as src/app.ts wires them; each answers plain JSON. */
export interface SelfServiceActions {
  /** its quota and credits state (the admin API's `GET /keys/{id}/quota`) */
  quota: (keyId: string) => Promise<unknown>
  /** its request counts over the last 24 h, by hour */
  usage: (keyId: string, now: number) => Promise<unknown>
  revoke: (keyId: string) => Promise<void>
  /** the new key (shown once), `replaces` and `replaces_expires_at` */
  rotate: (keyId: string, graceMs: number) => Promise<unknown>
}

export interface SelfServiceOptions {
  /** self_service.prefix (not `prefix`: fastify would put it before every route) */
  pathPrefix: string
  verifier: KeyVerifier
  actions: SelfServiceActions
  usage: UsageRecorder
}

declare module 'fastify' {
  interface FastifyRequest {
    /** the self-service request's verdict, once its key passed */
    selfVerdict?: Allowed
  }
}

export async function selfServiceRoutes (scope: FastifyInstance, o: SelfServiceOptions): Promise<void> {
  scope.decorateRequest('selfVerdict', undefined)
  const p = o.pathPrefix
  // each endpoint: the key's decision first (refused: answered, the body unread); any other path under the prefix
  // is 404 at once, with or without a key
  const elsewhere = new Set([p, `${p}/*`])
  scope.addHook('onRequest', (request, reply, done) => {
    if (elsewhere.has(request.routeOptions.url ?? '')) {
      done()
      return
    }
    const now = Date.now()
    const v = o.verifier.self(request.raw.rawHeaders, request.kg.clientIp, now)
    const go = (verdict: Verdict): void => {
      const allowed = applyVerdict(reply, verdict)
      request.kg.rule = undefined
      if (!allowed) {
        if (!request.raw.complete) reply.header('connection', 'close')
        return
      }
      request.kg.reason = 'allowed'
      request.selfVerdict = verdict as Allowed
      o.usage.record((verdict as Allowed).identity.keyId, now)
      done()
    }
    if (!(v instanceof Promise)) return go(v)
    v.then(go, (err: unknown) => { done(err instanceof Error ? err : new Error(String(err))) })
  })

  scope.get(`${p}/key`, async (request, reply) => {
    const v = request.selfVerdict as Allowed
    const quota = await o.actions.quota(v.identity.keyId)
    return json(reply, { ...whoami(v.identity), rate_limit: rateLimitOf(v), quota })
  })
  scope.get(`${p}/key/usage`, async (request, reply) => {
    const id = (request.selfVerdict as Allowed).identity.keyId
    return json(reply, await o.actions.usage(id, Date.now()))
  })
  scope.post(`${p}/key/revoke`, { bodyLimit: 1024 }, async (request, reply) => {
    await o.actions.revoke((request.selfVerdict as Allowed).identity.keyId)
    return json(reply, { revoked: true })
  })
  scope.post(`${p}/key/rotate`, { bodyLimit: 1024 }, async (request, reply) => {
    const identity = (request.selfVerdict as Allowed).identity
    if (!identity.grants.has(SELF_PERMISSION)) {
      return deny(reply, 'forbidden', 'missing_permission', challenges.insufficientScope(SELF_PERMISSION))
    }
    const graceMs = graceOf(request.body)
    if (typeof graceMs === 'string') return badGrace(request, reply, graceMs)
    return json(reply.code(201), await o.actions.rotate(identity.keyId, graceMs))
  })
  // the rest of the prefix is no upstream's either
  const notFound = async (_request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> =>
    deny(reply, 'not_found', 'no_route')
  scope.all(p, notFound)
  scope.all(`${p}/*`, notFound)
  scope.setErrorHandler((err: { statusCode?: number }, request, reply) => {
    const status = err.statusCode ?? 500
    if (status >= 400 && status < 500) {
      return deny(reply, status === 413 ? 'payload_too_large' : 'bad_request', 'bad_request')
    }
    request.log.error({ req_id: request.id, err: { message: (err as Error).message } }, 'self-service: internal error')
    request.kg.reason = 'internal_error'
    return sendError(reply, 'internal_error')
  })
}

function json (reply: FastifyReply, body: unknown): FastifyReply {
  return reply.header('content-type', JSON_CONTENT_TYPE).header('x-request-id', reply.request.id)
    .header('cache-control', 'no-store').send(JSON.stringify(body))
}

function whoami (id: Identity): Record<string, unknown> {
  const me: Record<string, unknown> = { id: id.keyId, type: id.type, org: id.org }
  if (id.userId !== undefined) me.user = id.userId
  me.role = id.role
  if (id.scope !== undefined) me.scope = [...id.scope.permissions]
  me.permissions = [...id.grants.permissions]
  if (id.expiresAt !== undefined) me.expires_at = new Date(id.expiresAt).toISOString()
  return me
}

/** the strictest rate limit that applied to this very request; none: null */
function rateLimitOf (v: Allowed): { limit: number, remaining: number, reset_s: number } | null {
  const r = v.rateLimit
  return r?.allowed === true ? { limit: r.limit, remaining: r.remaining, reset_s: r.resetS } : null
}

/** The grace asked for, in ms (none: 24 h); a string: why it is refused. */
export function graceOf (body: unknown): number | string {
  if (body === undefined || body === null) return DEFAULT_GRACE_MS
  if (typeof body !== 'object' || Array.isArray(body)) return 'expected a JSON object'
  const keys = Object.keys(body)
  if (keys.some((k) => k !== 'grace')) return 'only "grace" is accepted'
  const grace = (body as { grace?: unknown }).grace
  if (grace === undefined) return DEFAULT_GRACE_MS
  const ms = typeof grace === 'string' && grace.length <= 16 ? parseDuration(grace) : undefined
  if (ms === undefined || ms < 0 || ms > MAX_GRACE_MS) return 'expected a duration like 24h, at most 30d'
  return ms
}

function badGrace (request: FastifyRequest, reply: FastifyReply, reason: string): FastifyReply {
  request.kg.reason = 'bad_request'
  const { status, message } = ERRORS.bad_request
  return reply.code(status).header('content-type', JSON_CONTENT_TYPE).header('x-request-id', request.id)
    .send(JSON.stringify({ error: { code: 'bad_request', message, status, details: [{ field: 'grace', reason }] } }))
}
