/**
 * What probes and the scraper ask, without a credential: on the admin listener, or on
 * a listener of their own with `ops_listen` (admin-plane.ts buildOpsPlane), so that a
 * console facing browsers need not answer them.
 *   /healthz   liveness: the process answers
 *   /readyz    readiness: Redis answers (probed every second; a hung server is noticed by the probe's timeout)
 *   /metrics   Prometheus text (metrics-route.ts)
 */
import type { FastifyPluginAsync } from 'fastify'
import { sendError } from '../errors.js'
import { metricsRoute } from './metrics-route.js'
import type { AdminPlaneOptions } from './options.js'

export const opsRoutes: FastifyPluginAsync<AdminPlaneOptions> = async (app, o) => {
  app.get('/healthz', async () => ({ status: 'ok' }))
  app.get('/readyz', async (_request, reply) => {
    if (o.health.up) return { status: 'ready', redis: 'up' }
    return sendError(reply, 'service_unavailable')
  })
  await app.register(metricsRoute, o)
}
