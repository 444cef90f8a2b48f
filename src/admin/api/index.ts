/**
 * The admin API, /admin/v1/*: a front end of the admin actions, as the CLI is (one
 * implementation, several front ends: src/admin/actions/). Reference: docs/admin-api.md.
 * In the order a request meets it:
 *
 *   1. sign-in           429 for a peer with too many failed sign-ins of the
 *                        credential's kind (admin token or key), counted
 *                        before the lookup                              sign-in-limit.ts
 *                        then the admin token, or a keygate key checked by the
 *                        data plane's own stages: 401 / 403 / 503       sign-in.ts
 *                        without a Bearer credential, an SSO session's cookie
 *                        (its user re-checked through the cache); a state-changing
 *                        call with one needs `X-Requested-With: keygate`: 403
 *   2. route access      a route outside the caller's scope: 403       context.ts
 *   3. JSON in           closed TypeBox schemas, pasted keys refused: 400  validation.ts
 *   4. the route         keys, users, roles, orgs, audit, session      *-routes.ts
 *   5. errors            one catalogue; the precise reason to the log   refusal.ts
 *   6. the log line      one per request                               request-log.ts
 *
 * GET /admin/v1/openapi.json describes every route of this plugin (and only those:
 * the console, the hooks and the health routes live outside it) in OpenAPI 3.0, built by
 * @fastify/swagger from the TypeBox schemas the routes are validated with; it needs a
 * credential like any other admin route, but no scope.                 openapi.ts
 */
import type { FastifyPluginAsync } from 'fastify'
import { sendError } from '../../errors.js'
import { expectsContinue } from '../../http/framing.js'
import type { AdminPlaneOptions } from '../options.js'
import { auditRoutes } from './audit-routes.js'
import { createContext } from './context.js'
import { keyRoutes } from './key-routes.js'
import { orgRoutes } from './org-routes.js'
import { quotaRoutes } from './quota-routes.js'
import { identityRoutes } from './identity-routes.js'
import { createAdminRequestLog } from './request-log.js'
import './request-state.js'
import { createErrorHandler, refuse } from './refusal.js'
import { roleRoutes } from './role-routes.js'
import { sessionRoutes } from './session-routes.js'
import { createSessionSignIn, createSignIn, createSignInKind } from './sign-in.js'
import { readCookie, SESSION_COOKIE } from '../sso/index.js'
import { peerOf } from '../../peer.js'
import { clientAddressOf } from '../../http/peers.js'
import { createSignInLimit } from './sign-in-limit.js'
import { openApiRoute, useOpenApi } from './openapi.js'
import { usageRoutes } from './usage-routes.js'
import { requestLogRoutes } from './request-log-routes.js'
import { userRoutes } from './user-routes.js'
import { webhookRoutes } from './webhook-routes.js'
import { useJsonValidation } from './validation.js'
import { keyPrefixesOf } from '../../registry/key-format.js'

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS'])

export const adminApi: FastifyPluginAsync<AdminPlaneOptions> = async (app, o) => {
  const signIn = createSignIn({
    adminToken: o.config.admin_token,
    keyPrefix: keyPrefixesOf(o.config.keys),
    decisions: o.decisions,
    usage: o.usage
  })
  // the client as the data plane knows it: the TCP peer, or the client a trusted proxy reports
  const clientOf = clientAddressOf(o.config.trusted_proxies)
  const kindOf = createSignInKind({ adminToken: o.config.admin_token, keyPrefix: keyPrefixesOf(o.config.keys) })
  // the admin token's failures and key failures, counted apart
  const limits = {
    token: createSignInLimit({ perMinute: o.config.admin.sign_in_failures_per_minute }),
    key: createSignInLimit({ perMinute: o.config.admin.sign_in_failures_per_minute })
  }
  const sessionSignIn = o.sso === undefined
    ? undefined
    : createSessionSignIn({
      sessions: o.sso.sessions,
      decisions: o.decisions
    })
  app.decorateRequest('adminApi', null as unknown as never)
  // before any route, so that its onRoute hook sees them all
  await useOpenApi(app)

  // 1. sign-in, before anything is parsed: no credential, no body read, no 404 either
  app.addHook('onRequest', async (request, reply) => {
    request.adminApi = { principal: undefined, keyId: undefined, reason: undefined, detail: undefined }
    const kind = kindOf(request.raw.rawHeaders)
    // no Bearer credential: an SSO session's cookie, if any (a guess at 256 bits is no sign-in to limit)
    const cookie = kind === 'none' && o.sso !== undefined
      ? readCookie(request.headers.cookie, SESSION_COOKIE, o.sso.secure)
      : undefined
    if (cookie?.twice === true) {
      // (one may be planted: which one the browser holds as its own cannot be told)
      request.adminApi.reason = 'two_session_cookies'
      return sendError(reply, 'unauthorized')
    }
    const sessionId = cookie?.id
    if (sessionId !== undefined && sessionSignIn !== undefined) {
      const result = await sessionSignIn(sessionId)
      if (result.ok) {
        request.adminApi.principal = result.principal
        // CSRF: a browser sends the cookie by itself; a custom header only from a script of the same origin
        if (!SAFE_METHODS.has(request.method) && request.headers['x-requested-with'] !== 'keygate') {
          request.adminApi.reason = 'csrf_header_missing'
          request.adminApi.detail = 'a state-changing call with a session needs X-Requested-With: keygate'
          return sendError(reply, 'forbidden')
        }
        if (expectsContinue(request.raw)) reply.raw.writeContinue()
        return
      }
      if (result.code === 'forbidden') {
        return refuse(
          request,
          reply,
          undefined,
          'the user\'s role grants no admin scope'
        )
      }
      request.adminApi.reason = result.reason
      return sendError(reply, result.code)
    }
    // counted now, before the lookup: attempts in flight count against the limit
    const attempt = kind === 'none' ? undefined : limits[kind].attempt(peerOf(request.socket.remoteAddress))
    if (typeof attempt === 'number') {
      o.metrics.adminSignIn.limited()
      request.adminApi.detail = 'too many failed sign-ins from this peer'
      reply.header('retry-after', String(attempt))
      return sendError(reply, 'rate_limited')
    }
    let result
    try {
      result = await signIn(request.raw.rawHeaders, clientOf(request.raw.socket, request.raw.rawHeaders))
    } catch (err: unknown) {
      attempt?.passed()
      throw err
    }
    if (!result.ok && result.code === 'unauthorized' && result.reason !== 'missing_credential') {
      attempt?.failed()
      o.metrics.adminSignIn.failure()
    } else {
      attempt?.passed()
    }
    if (result.ok) {
      request.adminApi.principal = result.principal
      if (result.principal.kind === 'key') request.adminApi.keyId = result.principal.keyId
      // a client that waits for `100 Continue` gets it once signed in, never before
      if (expectsContinue(request.raw)) reply.raw.writeContinue()
      return
    }
    request.adminApi.keyId = result.keyId
    if (result.code === 'forbidden' && result.reason === 'address_not_allowed') {
      request.adminApi.reason = result.reason
      request.adminApi.detail = 'the key is bound to other client addresses (allowed_cidrs)'
      return sendError(reply, 'forbidden')
    }
    if (result.code === 'forbidden') return refuse(request, reply, undefined, 'the key grants no admin scope')
    request.adminApi.reason = result.reason
    if (result.challenge !== undefined) reply.header('www-authenticate', result.challenge)
    return sendError(reply, result.code)
  })

  // 3. JSON in
  useJsonValidation(app, keyPrefixesOf(o.config.keys))

  // 5, 6. errors and the log line
  app.setErrorHandler(createErrorHandler(o.logger, o.health))
  app.setNotFoundHandler((_request, reply) => sendError(reply, 'not_found'))
  app.addHook('onResponse', createAdminRequestLog(o.logger, keyPrefixesOf(o.config.keys)))

  // 4. the routes (2: each route outside some scope has `onRequest: requireScope(...)`)
  const ctx = createContext(o.config, o.redis)
  sessionRoutes(app, ctx, o.config, o.sso)
  keyRoutes(app, ctx)
  userRoutes(app, ctx)
  roleRoutes(app, ctx)
  orgRoutes(app, ctx)
  quotaRoutes(app, ctx)
  identityRoutes(app, ctx)
  auditRoutes(app, ctx)
  usageRoutes(app, ctx)
  requestLogRoutes(app, ctx)
  webhookRoutes(app, ctx)
  openApiRoute(app)
}
