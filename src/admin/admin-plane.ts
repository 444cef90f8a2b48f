/**
 * The admin listener (loopback by default), separate from the data plane like
 * Kong's admin_listen. In the order a reader meets them:
 *   /healthz, /readyz   liveness and readiness (no credential)      ops-routes.ts
 *   /metrics            Prometheus text (no credential)             metrics-route.ts
 *                       (these three on a listener of their own with
 *                       `ops_listen`: buildOpsPlane)
 *   /.well-known/jwks.json
 *                       the assertion's public keys (no credential;
 *                       404 when assertions are off)                ../assertion/jwks-route.ts
 *   /hooks/github/secret-scanning
 *                       leaked keys reported by GitHub (GitHub's
 *                       signature, no admin credential)             leaks/github-hook.ts
 *   /admin/v1/*         the admin API (admin credential)            api/
 *   /console            the Integrations console (static files)     console.ts
 *   /console/sso/login, the redirect_uri's path
 *                       SSO sign-in (with sso.oidc)                 sso/routes.ts
 */
import type { FastifyInstance } from 'fastify'
import { registerJwksRoute } from '../assertion/jwks-route.js'
import { refuseFraming } from '../http/deny.js'
import { createListener } from '../http/listener.js'
import { adminActions, adminWing } from './actions/index.js'
import { GITHUB_SCANNER } from './model/actors.js'
import { FULL_ADMIN } from './model/principal.js'
import { adminApi } from './api/index.js'
import { githubHook } from './leaks/github-hook.js'
import { createGithubKeys } from './leaks/github-keys.js'
import { consolePlugin } from './console.js'
import { opsRoutes } from './ops-routes.js'
import { createSso } from './sso/index.js'
import { ssoRoutes } from './sso/routes.js'
import type { AdminPlaneOptions } from './options.js'

export async function buildAdminPlane (o: AdminPlaneOptions): Promise<FastifyInstance> {
  const app = adminListener(o)
  // (with ops_listen, on their own listener: nothing without a credential beside the console)
  if (o.config.ops_listen === undefined) await app.register(opsRoutes, o)
  registerJwksRoute(app, o.assertions)
  const github = o.config.leaks.github
  await githubHook(app, {
    keys: createGithubKeys({ url: github.keys_url, timeoutMs: github.fetch_timeout_ms }),
    actions: adminActions(adminWing(o.config, o.redis), FULL_ADMIN, GITHUB_SCANNER),
    logger: o.logger
  })
  const sso = o.sso ?? await createSso(o.config, o.redis)
  await app.register(adminApi, { ...o, sso, prefix: '/admin/v1' })
  await app.register(consolePlugin, { ...o, sso, prefix: '/console' })
  if (o.config.sso.oidc !== undefined) {
    ssoRoutes(
      app,
      sso,
      { redirectUri: o.config.sso.oidc.redirect_uri, trustedProxies: o.config.trusted_proxies },
      o.logger
    )
  }

  await app.ready()
  return app
}

/** The listener of `ops_listen`: `/healthz`, `/readyz` and `/metrics` alone, for probes and the scraper. */
export async function buildOpsPlane (o: AdminPlaneOptions): Promise<FastifyInstance> {
  const app = adminListener(o)
  await app.register(opsRoutes, o)
  await app.ready()
  return app
}

/** The data plane's listener, framing rules and refusals (src/http/listener.ts), with a request id and no caching. */
function adminListener (o: AdminPlaneOptions): FastifyInstance {
  const { app, framing } = createListener({ logger: o.logger, limits: o.config.limits })
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    reply.header('cache-control', 'no-store')
    const problem = framing.problem(request.raw)
    if (problem === undefined) {
      done()
      return
    }
    refuseFraming(reply, problem)
  })
  return app
}
