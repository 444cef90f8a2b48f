/**
 * One log line per admin API request: request id, method, the route's pattern
 * (`/admin/v1/keys/:id`: neither the path's values nor the query), status, the
 * acting principal, and for refusals the reason and detail. Never a credential: the
 * route and the detail go through the key redactor (src/redact.ts), so a key a client
 * put in a name the detail quotes appears as its id at most.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import { createRedactor } from '../../redact.js'
import type { KeyPrefixes } from '../../registry/key-format.js'

export function createAdminRequestLog (logger: Logger, keyPrefix: KeyPrefixes) {
  const redact = createRedactor(keyPrefix)
  return function adminRequestLog (request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const s = request.adminApi
    logger.info({
      req_id: request.id,
      method: request.method,
      route: redact.text(request.routeOptions.url ?? '(no route)'),
      status: reply.statusCode,
      actor: s?.principal?.actor,
      key_id: s?.keyId,
      reason: s?.reason,
      detail: s?.detail === undefined ? undefined : redact.text(s.detail),
      latency_ms: Math.round(reply.elapsedTime * 1000) / 1000
    }, 'admin request')
    done()
  }
}
