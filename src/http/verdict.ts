/**
 * A verdict of the decision (src/decision/decide-request.ts) as a response, one
 * mapping for every front end that decides: the rate limit's headers (`RateLimit-*`,
 * and `Retry-After` over a limit) and the quota's (`RateLimit-Policy`, `RateLimit`,
 * src/quota/respond.ts) on an allowed response and a refusal alike, and a
 * refusal's catalogue error with its challenge. Each front end hands its own sink: a
 * fastify reply (the data plane, the authorizer: `applyVerdict`) or the raw socket of
 * a WebSocket upgrade (src/websocket/).
 */
import type { FastifyReply } from 'fastify'
import type { Allowed, Anonymous, Verdict } from '../decision/verdict.js'
import type { ErrorCode, Reason } from '../errors.js'
import { rateLimitHeaders } from '../ratelimit/respond.js'
import { quotaHeaders } from '../quota/respond.js'
import { deny } from './deny.js'
import { noteVerdict } from './request-state.js'

export interface VerdictSink<T> {
  /** the rate limit's headers, lower case, on whatever the response is */
  rateLimit: (to: T, headers: Record<string, string>) => void
  /** a refusal: the catalogue's error for `code`, with the challenge when it has one */
  refuse: (to: T, code: ErrorCode, reason: Reason, challenge: string | undefined) => void
}

/** Renders a verdict onto `to`; whether it allowed the request (false: refused, the refusal is sent). */
export function renderVerdict<T> (verdict: Verdict, sink: VerdictSink<T>, to: T): verdict is Allowed | Anonymous {
  const limited = rateLimitHeaders(verdict.rateLimit)
  const metered = quotaHeaders(verdict.quota)
  if (limited !== undefined || metered !== undefined) sink.rateLimit(to, { ...limited, ...metered })
  if (verdict.ok) return true
  sink.refuse(to, verdict.code, verdict.reason, verdict.challenge)
  return false
}

const REPLY: VerdictSink<FastifyReply> = {
  rateLimit (reply, headers) {
    reply.request.kg.rateLimited = true
    reply.headers(headers)
  },
  refuse (reply, code, reason, challenge) { deny(reply, code, reason, challenge) }
}

/**
 * A verdict on a fastify request and its reply (the data plane's gate, the authorizer):
 * the rule and the key id on the request state (the log line), then the response.
 */
export function applyVerdict (reply: FastifyReply, verdict: Verdict): verdict is Allowed | Anonymous {
  noteVerdict(reply.request.kg, verdict)
  return renderVerdict(verdict, REPLY, reply)
}
