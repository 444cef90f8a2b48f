/**
 * The admin API's errors: a refusal decided by the API itself (ApiRefusal), or the
 * registry's (AdminError, by kind), mapped onto the one error catalogue. Clients get
 * the catalogue's body; a refused write adds `details`, each problem with the field it
 * is about and a reason safe to show (AdminError's `details`, or for a refusal of the
 * input or of the registry's state its message). A 404 of the addressed object adds
 * nothing (another org's object looks exactly like a missing one), nor does a 403,
 * unless it carries a rule's reason that holds for every object alike. The
 * precise reason goes to the log line.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import { sendError, codeForStatus, ERRORS, JSON_CONTENT_TYPE, type ErrorCode } from '../../errors.js'
import { challenges } from '../../decision/challenges.js'
import { AdminError, CODE_OF_KIND, type ErrorDetail } from '../model/errors.js'
import type { RedisHealth } from '../../registry/redis-client.js'
import { isUnavailableReply, isWrongTypeReply, redisDidNotAnswer } from '../../registry/redis-replies.js'

export class ApiRefusal extends Error {
  override readonly name = 'ApiRefusal'
  /** `detail` goes to the log line only; `scope` to a 403's challenge; `details` to the client */
  constructor (
    readonly code: ErrorCode,
    readonly detail: string,
    readonly scope?: string,
    readonly details?: readonly ErrorDetail[]
  ) {
    super(detail)
  }
}

export const badRequest = (detail: string): ApiRefusal => new ApiRefusal('bad_request', detail)
/** A field's value refused by the API's own check: the field and the reason go to the client too. */
export const badField = (field: string, reason: string): ApiRefusal => new ApiRefusal(
  'bad_request',
  `${field}: ${reason}`,
  undefined,
  [{ field, reason }]
)
export const notFound = (detail: string): ApiRefusal => new ApiRefusal('not_found', detail)
export const forbidden = (detail: string, scope?: string): ApiRefusal => new ApiRefusal('forbidden', detail, scope)

/** A write's result, with its warnings when there are any (an org with no record). */
export function withWarnings<T extends object> (
  result: T,
  warnings: readonly ErrorDetail[]
): T & { warnings?: ErrorDetail[] } {
  return warnings.length === 0 ? result : { ...result, warnings: [...warnings] }
}

/** What a refusal may show of itself (see the header). */
function detailsOf (err: AdminError): readonly ErrorDetail[] | undefined {
  if (err.details !== undefined) return err.details
  return err.kind === 'invalid' || err.kind === 'conflict' ? [{ reason: err.message }] : undefined
}

function sendRefusal (reply: FastifyReply, code: ErrorCode, details: readonly ErrorDetail[] | undefined): FastifyReply {
  if (details === undefined || details.length === 0) return sendError(reply, code)
  const { status, message } = ERRORS[code]
  return reply.code(status)
    .header('content-type', JSON_CONTENT_TYPE)
    .header('x-request-id', reply.request.id)
    .send(JSON.stringify({ error: { code, message, status, details } }))
}

/**
 * The one way a signed-in caller is refused (sign-in without an admin scope, a route
 * outside its scope, a rule): the reason and detail to the log line, then 403 with its
 * RFC 6750 challenge, naming the permission that would allow it when there is one.
 */
export function refuse (
  request: FastifyRequest,
  reply: FastifyReply,
  needs: string | undefined,
  detail: string,
  details?: readonly ErrorDetail[]
): FastifyReply {
  request.adminApi.reason = 'missing_permission'
  request.adminApi.detail = detail
  reply.header('www-authenticate', challenges.insufficientScope(needs))
  return sendRefusal(reply, 'forbidden', details)
}

export function createErrorHandler (logger: Logger, health: RedisHealth) {
  return function onError (err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
    const state = request.adminApi
    if (err instanceof ApiRefusal) {
      if (err.code === 'forbidden') return refuse(request, reply, err.scope, err.detail)
      state.detail = err.detail
      return sendRefusal(reply, err.code, err.details)
    }
    if (err instanceof AdminError) {
      if (err.kind === 'forbidden') return refuse(request, reply, err.needs, err.message, err.details)
      state.detail = err.message
      return sendRefusal(reply, CODE_OF_KIND[err.kind], detailsOf(err))
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
    logger.error(
      { req_id: request.id, err: { type: err.name, message: err.message, stack: err.stack } },
      'admin API internal error'
    )
    return sendError(reply, 'internal_error')
  }
}
