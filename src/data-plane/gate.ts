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
import type { Route } from '../decision/route-table.js'
import type { UpstreamCost } from '../quota/upstream-cost.js'

export interface GateOptions {
  decider: RequestDecider
  /** the route the gate stands in front of: its key header, its rewrite */
  route: Route
  bodyLimit: number
  /** notes each allowed key's use (last_used_at), batched off the request path */
  usage: UsageRecorder
  /** set when CORS is on: preflights are answered here, before any credential is read */
  cors?: CorsPolicy | undefined
  /** gives back a metered request's fixed cost (src/quota/upstream-cost.ts), when its body is refused */
  costs?: UpstreamCost | undefined
}

export type Gate = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void

export function createGate (o: GateOptions): Gate {
  const { decider } = o
  const rewrite = o.route.rewrite
  return function gate (request, reply, done) {
    // (CORS on: a browser's preflight carries no credential; answered by the gateway itself)
    if (o.cors !== undefined && isPreflight(request)) {
      answerPreflight(o.cors, request, reply)
      return
    }

    // credential to rate limits: who is calling, may they, how often
    const now = Date.now()
    const verdict = decider.decide(
      request.method,
      request.kg.path,
      request.raw.rawHeaders,
      request.kg.clientIp,
      now,
      o.route
    )
    if (!(verdict instanceof Promise)) {
      admit(request, reply, verdict, now, done)
      return
    }
    verdict.then(
      (result) => { admit(request, reply, result, Date.now(), done) },
      (err: unknown) => { done(err instanceof Error ? err : new Error(String(err))) }
    )
  }

  function admit (
    request: FastifyRequest,
    reply: FastifyReply,
    verdict: Verdict,
    now: number,
    done: HookHandlerDoneFunction
  ): void {
    if (!applyVerdict(reply, verdict)) return
    // a fixed cost spent by the decision: given back if the body is refused (body-limit.ts)
    const costs = o.costs
    if (costs !== undefined && verdict.quota?.allowed === true && typeof verdict.rule.cost === 'number' &&
      verdict.rule.cost > 0 && verdict.identity !== undefined) {
      const identity = verdict.identity
      const cost = verdict.rule.cost
      const refund = (): void => { costs.debit(identity, -cost) }
      request.kg.refund = refund
    }

    // body: a declared body larger than the limit is refused before anything is read
    if (declaredTooLarge(request.headers, o.bodyLimit)) {
      refuseBody(reply, 'too_large')
      return
    }

    // the path forwarded, derived from the decided one (src/decision/route-rewrite.ts)
    if (rewrite !== undefined) request.kg.forwardPath = rewrite(request.kg.path)
    if (verdict.identity === undefined) {
      request.kg.reason = 'public'
    } else {
      request.kg.reason = 'allowed'
      o.usage.record(verdict.identity.keyId, now)
    }
    done()
  }
}
