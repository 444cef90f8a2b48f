/**
 * The admin API, /admin/v1/*: the same AdminStore as the CLI (one implementation,
 * two front ends). Reference: docs/admin-api.md.
 */
import type { FastifyPluginAsync } from 'fastify'
import type { AdminPlaneOptions } from '../admin-plane.js'

export const adminApi: FastifyPluginAsync<AdminPlaneOptions> = async () => {
  // routes: to be built (issue 5)
}
