/**
 * The last stage: one JSON line per request, with the decision's precise reason.
 * The path is the one decided on, without its query string; no header is logged.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'

export function createRequestLog (logger: Logger) {
  return function logRequest (request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const s = request.kg
    const status = reply.statusCode
    logger.info({
      req_id: request.id,
      method: request.method,
      path: s?.path,
      status,
      key_id: s?.keyId,
      reason: s?.reason ?? (status >= 500 ? 'internal_error' : 'bad_request'),
      rule: s?.rule,
      latency_ms: Math.round(reply.elapsedTime * 1000) / 1000
    }, 'request')
    done()
  }
}
