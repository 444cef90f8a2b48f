/**
 * Stages 3-9 for a request under a protected route prefix: authentication (3-6, one
 * function shared with the admin sign-in and `keygate check`: authenticate-request.ts),
 * then the route rule (7), the rate limits (8, src/ratelimit/) and the declared body
 * size (9). Authentication always precedes authorization, so a bad key is 401, never
 * 403 or 404; a refused request never reaches the rate limits, so it consumes nothing.
 *
 * A callback hook: when every record is cached and no rate limit applies, the whole
 * gate runs synchronously, with no promise on the hot path. A denial sends the reply
 * and does not call `done`.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import type { UsageRecorder } from '../registry/usage-recorder.js'
import type { Authentication, AuthenticateRequest } from './authenticate-request.js'
import { declaredTooLarge, refuseBody } from './body-limit.js'
import { answerPreflight, isPreflight, type CorsPolicy } from './cors.js'
import { authorize, type Identity } from './decide.js'
import { challenges, deny } from './deny.js'
import type { RuleMatcher } from './match-rule.js'
import type { Limiter } from '../ratelimit/limiter.js'
import { applyVerdict } from '../ratelimit/respond.js'

export interface GateOptions {
  authenticate: AuthenticateRequest
  matchRule: RuleMatcher
  bodyLimit: number
  /** notes each allowed key's use (last_used_at), batched off the request path */
  usage: UsageRecorder
  /** set when CORS is on: preflights are answered here, before any credential is read */
  cors?: CorsPolicy | undefined
  /** rate limits (contract section 13); without one, none apply */
  limiter?: Limiter | undefined
}

export type Gate = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void

export function createGate (o: GateOptions): Gate {
  return function gate (request, reply, done) {
    // (CORS on: a browser's preflight carries no credential; answered by the gateway itself)
    if (o.cors !== undefined && isPreflight(request)) {
      answerPreflight(o.cors, request, reply)
      return
    }

    // 3-6. who is calling
    const now = Date.now()
    const auth = o.authenticate(request.raw.rawHeaders, request.raw.socket.remoteAddress, now)
    if (!(auth instanceof Promise)) {
      decide(request, reply, auth, now, done)
      return
    }
    auth.then(
      (result) => { decide(request, reply, result, Date.now(), done) },
      (err: unknown) => { done(err instanceof Error ? err : new Error(String(err))) }
    )
  }

  function decide (request: FastifyRequest, reply: FastifyReply, auth: Authentication, now: number, done: HookHandlerDoneFunction): void {
    const state = request.kg
    if (!auth.ok) {
      state.keyId = auth.keyId
      deny(reply, auth.code, auth.reason, auth.challenge)
      return
    }
    const { identity } = auth
    state.keyId = identity.keyId
    state.identity = identity

    // 7. the route rule: default deny, org constraint, permissions
    const match = o.matchRule(request.method, state.path)
    state.rule = match?.rule.index
    const may = authorize(identity, match)
    if (!may.ok) {
      deny(reply, 'forbidden', may.reason, challenges.insufficientScope(may.reason === 'missing_permission' ? may.scope : undefined))
      return
    }

    // 8. rate limits: every one that applies, the strictest decides (429); none: no cost
    const verdict = o.limiter?.check(identity, now)
    if (verdict instanceof Promise) {
      verdict.then(
        (v) => { if (applyVerdict(reply, v)) admit(request, reply, identity, now, done) },
        (err: unknown) => { done(err instanceof Error ? err : new Error(String(err))) }
      )
      return
    }
    if (!applyVerdict(reply, verdict)) return
    admit(request, reply, identity, now, done)
  }

  function admit (request: FastifyRequest, reply: FastifyReply, identity: Identity, now: number, done: HookHandlerDoneFunction): void {
    // 9. a declared body larger than the limit is refused before anything is read
    if (declaredTooLarge(request.headers, o.bodyLimit)) {
      refuseBody(reply, 'too_large')
      return
    }

    request.kg.reason = 'allowed'
    o.usage.record(identity.keyId, now)
    done()
  }
}
