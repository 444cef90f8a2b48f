/**
 * Stages 2-7 for a request under a protected route prefix, in the contract's order:
 * extract the credential, check its format locally, resolve the records, decide
 * who is calling, then match the rule and decide what they may do. Authentication
 * always precedes authorization, so a bad key is 401, never 403 or 404.
 *
 * A callback hook: when every record is cached the whole gate runs synchronously,
 * with no promise on the hot path. A denial sends the reply and does not call `done`.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { parseKey, type ParsedKey } from '../registry/key-material.js'
import { answerPreflight, isPreflight, type CorsPolicy } from './cors.js'
import { declaredTooLarge, refuseBody } from './body-limit.js'
import { authenticate, authorize } from './decide.js'
import { challenges, deny } from './deny.js'
import { extractCredential } from './extract-credential.js'
import type { RuleMatcher } from './match-rule.js'
import { RegistryUnavailable, type IdentityResolver, type Resolved } from './resolve-identity.js'
import type { UsageRecorder } from '../registry/usage-recorder.js'
import type { AuthMeter } from '../metrics/metrics.js'

export interface GateOptions {
  keyPrefix: string
  resolver: IdentityResolver
  matchRule: RuleMatcher
  bodyLimit: number
  /** notes each allowed key's use (last_used_at), batched off the request path */
  usage: UsageRecorder
  /** decisions from the cache are counted; those that wait for Redis are timed too */
  meter: AuthMeter
  /** set when CORS is on: preflights are answered here, before any credential is read */
  cors?: CorsPolicy | undefined
}

export type Gate = (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void

export function createGate (o: GateOptions): Gate {
  return function gate (request, reply, done) {
    // (CORS on: a browser's preflight carries no credential; answered by the gateway itself)
    if (o.cors !== undefined && isPreflight(request)) {
      answerPreflight(o.cors, request, reply)
      return
    }

    // 2. exactly one Bearer credential
    const credential = extractCredential(request.raw.rawHeaders)
    if (!credential.ok) {
      deny(reply, 'unauthorized', credential.reason, credential.invalidToken ? challenges.invalidToken : challenges.none)
      return
    }

    // 3. format and checksum, locally: a malformed key never reaches the cache or Redis
    const key = parseKey(credential.token, o.keyPrefix)
    if (typeof key === 'string') {
      deny(reply, 'unauthorized', key, challenges.invalidToken)
      return
    }
    request.kg.keyId = key.id

    // 4-6. key record -> user -> role, from the cache or in one Redis round trip
    const now = Date.now()
    const resolved = o.resolver.resolve(key.id, now, request.raw.socket.remoteAddress)
    if (!(resolved instanceof Promise)) {
      if (resolved.limited !== true) o.meter.fromCache()
      decide(request, reply, key, resolved, now, done)
      return
    }
    const lookupAt = performance.now()
    resolved.then(
      (records) => {
        o.meter.fromRedis(performance.now() - lookupAt)
        decide(request, reply, key, records, Date.now(), done)
      },
      (err: unknown) => {
        o.meter.fromRedis(performance.now() - lookupAt)
        if (err instanceof RegistryUnavailable) deny(reply, 'service_unavailable', 'registry_unavailable')
        else throw err
      }
    ).catch((err: unknown) => { done(err instanceof Error ? err : new Error(String(err))) })
  }

  function decide (request: FastifyRequest, reply: FastifyReply, key: ParsedKey, records: Resolved, now: number, done: HookHandlerDoneFunction): void {
    const state = request.kg
    const who = authenticate(key, records, now)
    if (!who.ok) {
      deny(reply, 'unauthorized', who.reason, challenges.invalidToken)
      return
    }
    state.identity = who.identity

    // 7. the route rule: default deny, org constraint, permissions
    const match = o.matchRule(request.method, state.path)
    state.rule = match?.rule.index
    const may = authorize(who.identity, match)
    if (!may.ok) {
      deny(reply, 'forbidden', may.reason, challenges.insufficientScope(may.reason === 'missing_permission' ? may.scope : undefined))
      return
    }

    // a declared body larger than the limit is refused before anything is read
    if (declaredTooLarge(request.headers, o.bodyLimit)) {
      refuseBody(reply, 'too_large')
      return
    }

    state.reason = 'allowed'
    o.usage.record(key.id, now)
    done()
  }
}
