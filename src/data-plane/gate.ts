/**
 * The stages from credential to body for a request under a protected route prefix:
 * the decision (who is calling, the route rule, the rate limits; one function shared
 * with the authorizer and `keygate check`: src/decision/decide-request.ts), then the
 * declared body size.
 * Authentication always precedes authorization, so a bad key is 401, never 403 or 404;
 * a refused request never reaches the rate limits, so it consumes nothing.
 *
 * A callback hook: when every record is cached and no rate limit applies, the whole
 * gate runs synchronously, with no promise on the hot path. A denial sends the reply
 * and does not call `done`.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import type { UsageRecorder } from '../usage/last-used.js'
import { declaredTooLarge, refuseBody } from './body-limit.js'
import { answerPreflight, isPreflight, type CorsPolicy } from './cors.js'
import type { RequestDecider } from '../decision/decide-request.js'
import type { Verdict } from '../decision/verdict.js'
import { applyVerdict } from '../http/verdict.js'

export interface GateOptions {
  decider: RequestDecider
  bodyLimit: number
  /** notes each allowed key's use (last_used_at), batched off the request path */
  usage: UsageRecorder
  /** set when CORS is on: preflights are answered here, before any credential is read */
  cors?: CorsPolicy | undefined
}

export type Gate = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void

export function createGate (o: GateOptions): Gate {
  const { decider } = o
  return function gate (request, reply, done) {
    // (CORS on: a browser's preflight carries no credential; answered by the gateway itself)
    if (o.cors !== undefined && isPreflight(request)) {
      answerPreflight(o.cors, request, reply)
      return
    }

    // credential to rate limits: who is calling, may they, how often
    const now = Date.now()
    const verdict = decider.decide(request.method, request.kg.path, request.raw.rawHeaders, request.kg.clientIp, now)
    if (!(verdict instanceof Promise)) {
      admit(request, reply, verdict, now, done)
      return
    }
    verdict.then(
      (result) => { admit(request, reply, result, Date.now(), done) },
      (err: unknown) => { done(err instanceof Error ? err : new Error(String(err))) }
    )
  }

  function admit (request: FastifyRequest, reply: FastifyReply, verdict: Verdict, now: number, done: HookHandlerDoneFunction): void {
    const identity = applyVerdict(reply, verdict)
    if (identity === undefined) return

    // body: a declared body larger than the limit is refused before anything is read
    if (declaredTooLarge(request.headers, o.bodyLimit)) {
      refuseBody(reply, 'too_large')
      return
    }

    request.kg.reason = 'allowed'
    o.usage.record(identity.keyId, now)
    done()
  }
}
