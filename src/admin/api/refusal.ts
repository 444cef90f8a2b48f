/**
 * The admin API's errors: a refusal decided by the API itself (ApiRefusal), or the
 * registry's (AdminError, by kind), mapped onto the one error catalogue. Clients get
 * the catalogue's uniform body; the precise reason goes to the log line.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import { sendError, codeForStatus, type ErrorCode } from '../../errors.js'
import { challenges } from '../../decision/challenges.js'
import { AdminError, type AdminErrorKind } from '../../registry/admin/index.js'
import { isUnavailableReply, isWrongTypeReply, redisDidNotAnswer, type RedisHealth } from '../../registry/redis-client.js'

export class ApiRefusal extends Error {
  override readonly name = 'ApiRefusal'
  /** `detail` goes to the log line only; `scope` to a 403's challenge */
  constructor (readonly code: ErrorCode, readonly detail: string, readonly scope?: string) {
    super(detail)
  }
}

export const badRequest = (detail: string): ApiRefusal => new ApiRefusal('bad_request', detail)
export const notFound = (detail: string): ApiRefusal => new ApiRefusal('not_found', detail)
export const forbidden = (detail: string, scope?: string): ApiRefusal => new ApiRefusal('forbidden', detail, scope)

const BY_KIND: Record<AdminErrorKind, ErrorCode> = { invalid: 'bad_request', forbidden: 'forbidden', not_found: 'not_found', conflict: 'conflict' }

/**
 * The one way a signed-in caller is refused (sign-in without an admin scope, a route
 * outside its scope, a rule): the reason and detail to the log line, then 403 with its
 * RFC 6750 challenge, naming the permission that would allow it when there is one.
 */
export function refuse (request: FastifyRequest, reply: FastifyReply, needs: string | undefined, detail: string): FastifyReply {
  request.adminApi.reason = 'missing_permission'
  request.adminApi.detail = detail
  reply.header('www-authenticate', challenges.insufficientScope(needs))
  return sendError(reply, 'forbidden')
}

export function createErrorHandler (logger: Logger, health: RedisHealth) {
  return function onError (err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const state = request.adminApi
    if (err instanceof ApiRefusal) {
      if (err.code === 'forbidden') return refuse(request, reply, err.scope, err.detail)
      state.detail = err.detail
      return sendError(reply, err.code)
    }
    if (err instanceof AdminError) {
      if (err.kind === 'forbidden') return refuse(request, reply, err.needs, err.message)
      state.detail = err.message
      return sendError(reply, BY_KIND[err.kind])
    }
    const status = err.statusCode ?? 500
    if (status >= 400 && status < 500) {
      // validation (the failing field and rule, never its value), bad JSON, media type, size
      state.detail = err.code === 'FST_ERR_VALIDATION' ? err.message : err.code
      return sendError(reply, codeForStatus(status))
    }
    if (isWrongTypeReply(err)) {
      state.detail = 'a registry record is not a hash (written with something other than HSET?)'
      return sendError(reply, 'conflict')
    }
    if (redisDidNotAnswer(err) || isUnavailableReply(err) || !health.up) {
      state.reason = 'registry_unavailable'
      return sendError(reply, 'service_unavailable')
    }
    logger.error({ req_id: request.id, err: { type: err.name, message: err.message, stack: err.stack } }, 'admin API internal error')
    return sendError(reply, 'internal_error')
  }
}
