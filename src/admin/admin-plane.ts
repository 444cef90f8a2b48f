/**
 * The admin listener (loopback by default): liveness, readiness, and later the
 * admin API, console and metrics. Separate from the data plane, like Kong's admin_listen.
 */
import Fastify, { type FastifyInstance } from 'fastify'
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import { codeForStatus, sendError } from '../errors.js'
import type { RedisHealth } from '../registry/redis-client.js'

export interface AdminPlaneOptions {
  logger: Logger
  health: RedisHealth
}

export async function buildAdminPlane (o: AdminPlaneOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: false,
    requestIdHeader: false,
    genReqId: () => randomUUID()
  })
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    reply.header('cache-control', 'no-store')
    done()
  })
  app.setNotFoundHandler((_request, reply) => sendError(reply, 'not_found'))
  app.setErrorHandler((err: { statusCode?: number }, _request, reply) => sendError(reply, codeForStatus(err.statusCode ?? 500)))

  /** Liveness: the process answers. */
  app.get('/healthz', async () => ({ status: 'ok' }))

  /** Readiness: Redis answers (probed every second; a hung server is noticed by the probe's timeout). */
  app.get('/readyz', async (_request, reply) => {
    if (o.health.up) return { status: 'ready', redis: 'up' }
    return sendError(reply, 'service_unavailable')
  })

  await app.ready()
  return app
}
