/**
 * Stages 2-7 for a request under a protected route prefix, in the contract's order:
 * extract the credential, check its format locally, resolve the records, decide
 * who is calling, then match the rule and decide what they may do. Authentication
 * always precedes authorization, so a bad key is 401, never 403 or 404.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { parseKey } from '../registry/key-material.js'
import { authenticate, authorize } from './decide.js'
import { challenges, deny } from './deny.js'
import { extractCredential } from './extract-credential.js'
import type { RuleMatcher } from './match-rule.js'
import { RegistryUnavailable, type IdentityResolver } from './resolve-identity.js'

export interface GateOptions {
  keyPrefix: string
  resolver: IdentityResolver
  matchRule: RuleMatcher
  bodyLimit: number
}

export function createGate (o: GateOptions) {
  return async function gate (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const state = request.kg

    // 2. exactly one Bearer credential
    const credential = extractCredential(request.raw.rawHeaders)
    if (!credential.ok) {
      return deny(reply, 'unauthorized', credential.reason, credential.invalidToken ? challenges.invalidToken : challenges.none)
    }

    // 3. format and checksum, locally: a malformed key never reaches the cache or Redis
    const key = parseKey(credential.token, o.keyPrefix)
    if (typeof key === 'string') return deny(reply, 'unauthorized', key, challenges.invalidToken)
    state.keyId = key.id

    // 4-6. key record -> user -> role, from the cache or in one Redis round trip
    let resolved
    try {
      resolved = await o.resolver.resolve(key.id)
    } catch (err: unknown) {
      if (err instanceof RegistryUnavailable) return deny(reply, 'service_unavailable', 'registry_unavailable')
      throw err
    }
    const who = authenticate(key, resolved, Date.now())
    if (!who.ok) return deny(reply, 'unauthorized', who.reason, challenges.invalidToken)
    state.identity = who.identity

    // 7. the route rule: default deny, org constraint, permissions
    const match = o.matchRule(request.method, state.path)
    state.rule = match?.rule.index
    const may = authorize(who.identity, match)
    if (!may.ok) {
      return deny(reply, 'forbidden', may.reason,
        challenges.insufficientScope(may.reason === 'missing_permission' ? may.scope : undefined))
    }

    // a declared body larger than the limit is refused before anything is read
    const declared = request.headers['content-length']
    if (declared !== undefined && Number(declared) > o.bodyLimit) return deny(reply, 'payload_too_large', 'body_too_large')

    state.reason = 'allowed'
    return undefined
  }
}
