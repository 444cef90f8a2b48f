/**
 * Every denial the gateway sends: the catalogue's body for the status, the
 * RFC 6750 challenge, and the precise reason kept for the log line only.
 */
import type { FastifyReply } from 'fastify'
import { sendError, type ErrorCode, type Reason } from '../errors.js'

const REALM = 'Bearer realm="keygate"'

export const challenges = {
  /** no credential, or another scheme */
  none: REALM,
  /** a Bearer credential that is malformed, duplicated, unknown, revoked, expired... */
  invalidToken: `${REALM}, error="invalid_token"`,
  /** valid key, not enough permission; `scope` only when a rule matched */
  insufficientScope: (scope?: string) => scope === undefined
    ? `${REALM}, error="insufficient_scope"`
    : `${REALM}, error="insufficient_scope", scope="${scope}"`
}

export function deny (reply: FastifyReply, code: ErrorCode, reason: Reason, challenge?: string): FastifyReply {
  reply.request.kg.reason = reason
  if (challenge !== undefined) reply.header('www-authenticate', challenge)
  return sendError(reply, code)
}
