/**
 * GET /metrics: Prometheus text exposition (no credential, like /healthz).
 */
import type { FastifyPluginAsync } from 'fastify'
import type { AdminPlaneOptions } from './admin-plane.js'

export const metricsRoute: FastifyPluginAsync<AdminPlaneOptions> = async () => {
  // to be built (issue 5)
}
