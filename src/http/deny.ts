/**
 * Every denial the gateway sends: the catalogue's body for the status, the
 * RFC 6750 challenge (decision/challenges.ts), and the precise reason kept for the log line only; and a
 * decision's verdict on the request, for the two listeners that decide.
 */
import type { FastifyReply } from 'fastify'
import { sendError, type ErrorCode, type Reason } from '../errors.js'
import { setRateLimitHeaders } from '../ratelimit/respond.js'
import type { Identity } from '../decision/identity.js'
import type { Verdict } from '../decision/decide-request.js'
import type { FramingProblem } from './framing.js'
import { noteVerdict } from './request-state.js'

export function deny (reply: FastifyReply, code: ErrorCode, reason: Reason, challenge?: string): FastifyReply {
  reply.request.kg.reason = reason
  if (challenge !== undefined) reply.header('www-authenticate', challenge)
  return sendError(reply, code)
}

/** A framing refusal (framing.ts); after most, the connection closes (the rest of the message is not read). */
export function refuseFraming (reply: FastifyReply, [code, reason, close]: FramingProblem): FastifyReply {
  if (close) reply.header('connection', 'close')
  return deny(reply, code, reason)
}

/**
 * A verdict of the decision (decide-request.ts) on the request and its reply, for the
 * data plane's gate and the authorizer alike: the rule and the key id on the request
 * state (the log line), a rate limit's headers, and a refusal sent. Returns the
 * identity of an allowed request (undefined: refused, the reply is sent).
 */
export function applyVerdict (reply: FastifyReply, verdict: Verdict): Identity | undefined {
  noteVerdict(reply.request.kg, verdict)
  setRateLimitHeaders(reply, verdict.rateLimit)
  if (!verdict.ok) {
    deny(reply, verdict.code, verdict.reason, verdict.challenge)
    return undefined
  }
  return verdict.identity
}
