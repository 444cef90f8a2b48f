/**
 * Every denial the gateway sends: the catalogue's body for the status, the
 * RFC 6750 challenge (src/decision/challenges.ts), and the precise reason kept for the
 * log line only.
 */
import type { FastifyReply } from 'fastify'
import { sendError, type ErrorCode, type Reason } from '../errors.js'
import type { FramingProblem } from './framing.js'

export function deny (reply: FastifyReply, code: ErrorCode, reason: Reason, challenge?: string): FastifyReply {
  // (the admin listener keeps its own state: src/admin/api/request-state.ts)
  const state = reply.request.kg
  if (state !== null) state.reason = reason
  if (challenge !== undefined) reply.header('www-authenticate', challenge)
  return sendError(reply, code)
}

/** A framing refusal (framing.ts); after most, the connection closes (the rest of the message is not read). */
export function refuseFraming (reply: FastifyReply, [code, reason, close]: FramingProblem): FastifyReply {
  if (close) reply.header('connection', 'close')
  return deny(reply, code, reason)
}
