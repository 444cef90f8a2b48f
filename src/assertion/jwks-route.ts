/**
 * `GET /.well-known/jwks.json`: the assertion's public keys as a JWK Set (RFC 7517), for
 * upstreams to verify with. Public, no credential; cacheable for a few minutes, which is
 * short beside a rotation's overlap (docs/assertion.md). Registered only when assertions
 * are on; without them the path is the listener's plain 404.
 */
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { Assertions } from './assertions.js'

export const JWKS_PATH = '/.well-known/jwks.json'

/** seconds a client may reuse the JWK Set */
export const JWKS_MAX_AGE_S = 300

export function registerJwksRoute (app: FastifyInstance, assertions: Assertions | undefined): void {
  if (assertions === undefined) return
  app.get(JWKS_PATH, (_request, reply) => sendJwks(reply, assertions))
}

/** The JWK Set as the answer (also the authorizer's, which routes every request itself). */
export function sendJwks (reply: FastifyReply, assertions: Assertions): FastifyReply {
  return reply
    .header('content-type', 'application/json; charset=utf-8')
    .header('cache-control', `public, max-age=${JWKS_MAX_AGE_S}`)
    .send(assertions.jwksJson)
}
