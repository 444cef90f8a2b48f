/**
 * A rate-limit verdict on the reply: `RateLimit-Limit`, `RateLimit-Remaining` and
 * `RateLimit-Reset` (seconds) on every response to a limited request, allowed or not
 * (on a proxied response they replace any the upstream sent: proxy.ts); over a limit,
 * `429 rate_limited` with `Retry-After` (whole seconds, at least 1).
 */
import type { FastifyReply } from 'fastify'
import { deny } from '../pipeline/deny.js'
import type { Verdict } from './limiter.js'

/** Sets the headers; sends the refusal when there is one. Returns whether the request goes on. */
export function applyVerdict (reply: FastifyReply, v: Verdict | undefined): boolean {
  if (v === undefined) return true
  if (v.allowed) {
    setHeaders(reply, v.limit, v.remaining, v.resetS)
    return true
  }
  if (v.reason === 'rate_limit_unavailable') {
    deny(reply, 'service_unavailable', v.reason)
    return false
  }
  setHeaders(reply, v.limit, 0, v.resetS)
  reply.header('retry-after', String(v.retryAfterS))
  deny(reply, 'rate_limited', v.reason)
  return false
}

function setHeaders (reply: FastifyReply, limit: number, remaining: number, resetS: number): void {
  reply.request.kg.rateLimited = true
  reply.header('ratelimit-limit', String(limit))
  reply.header('ratelimit-remaining', String(remaining))
  reply.header('ratelimit-reset', String(resetS))
}
