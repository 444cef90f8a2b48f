/**
 * The Integrations console at /console: static files, strict CSP, no inline script.
 */
import type { FastifyPluginAsync } from 'fastify'
import type { AdminPlaneOptions } from './admin-plane.js'

export const consolePlugin: FastifyPluginAsync<AdminPlaneOptions> = async () => {
  // to be built (issue 5)
}
