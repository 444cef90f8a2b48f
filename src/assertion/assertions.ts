/**
 * The signed identity assertion (docs/assertion.md): a compact JWS
 * per allowed request, which the data plane and the authorizer both attach.
 *
 * Built once at start-up: the JWK Set (jose: JWK export, RFC 7638 thumbprints as kids),
 * the protected header, already base64url-encoded. Per request: the claims as JSON text
 * (claims.ts), base64url, one signature over `header.claims`.
 *
 * The signature is node:crypto's `sign()` over the precomputed input (the same
 * primitive jose calls through WebCrypto), not jose's CompactSign, which re-serialises
 * the header and signs asynchronously: CPU per token, `taskset -c 1 node
 * bench/dist/assertion-signing.js` (docs/assertion.md), Ed25519 40 µs with CompactSign
 * against 23 µs with sign(), P-256 39 µs against 20 µs.
 */
import { sign, type KeyObject } from 'node:crypto'
import type { JWK } from 'jose'
import type { AssertionConfig } from '../config/schema.js'
import type { Identity } from '../decision/identity.js'
import { identityBoundClaims, identityClaims, issuerClaim, protectedHeader, requestClaims } from './claims.js'
import type { AssertionAlg, AssertionKeys } from '../config/assertion-key-files.js'

export interface Assertions {
  alg: AssertionAlg
  /** the signing key's id: its RFC 7638 JWK thumbprint (SHA-256) */
  kid: string
  /** the JWK Set: the signing key's public half, then the previous keys' */
  jwks: { keys: JWK[] }
  /** the JWK Set as served, serialised once */
  jwksJson: string
  /** the token for one allowed request (nowMs: the clock, Date.now()) */
  forRequest: (identity: Identity, method: string, path: string, requestId: string, nowMs: number) => string
}

/** Identity-bound tokens kept at most (one per key id, role, org and user seen recently). */
export const IDENTITY_TOKENS_KEPT = 10_000

/** The assertions for a configuration; undefined when they are off. */
export async function createAssertions (
  a: AssertionConfig, keys: AssertionKeys | undefined
): Promise<Assertions | undefined> {
  if (!a.enabled) return undefined
  if (keys === undefined) throw new Error('identity.assertion.enabled: no signing key')
  const jwks = await jwkSet(keys.publicKeys)
  const kid = jwks.keys[0]?.kid as string
  const head = Buffer.from(protectedHeader(keys.alg, kid)).toString('base64url') + '.'
  const signature = signer(keys.alg, keys.privateKey)
  const token = (claims: string): string => {
    const input = head + Buffer.from(claims).toString('base64url')
    return input + '.' + signature(input)
  }
  const iss = issuerClaim(a.issuer)
  const ttl = a.ttl_s

  let forRequest: Assertions['forRequest']
  if (a.bind === 'request') {
    forRequest = (identity, method, path, requestId, nowMs) => {
      const iat = Math.floor(nowMs / 1000)
      return token(requestClaims(iss, identityClaims(identity), method, path, requestId, iat, iat + ttl))
    }
  } else {
    // one token per identity, reused until half its lifetime has passed, so a reused
    // token still has at least ttl/2 to live when an upstream receives it. Bounded in
    // the order tokens were issued, not by use: the oldest is the next to be renewed
    // anyway, and a hit stays one Map lookup on the request path.
    const kept = new Map<string, { token: string, issuedAtMs: number, renewAtMs: number }>()
    forRequest = (identity, _method, _path, _requestId, nowMs) => {
      // the cache key names every claim of the identity, unambiguously (the fields a
      // registry edit can fill with anything are length-prefixed; the role comes last);
      // the claims themselves (five JSON strings) are built only when a token is signed
      const user = identity.userId ?? ''
      const ident = identity.identityId === undefined ? '' : `${identity.identityId}|${identity.externalId ?? ''}`
      const meta = identity.meta?.header ?? ''
      const who = `${identity.type}|${identity.keyId}|${user.length}:${user}|` +
        `${identity.org.length}:${identity.org}|${ident.length}:${ident}|${meta.length}:${meta}|${identity.role}`
      const held = kept.get(who)
      if (held !== undefined && nowMs < held.renewAtMs && nowMs >= held.issuedAtMs) return held.token
      const iat = Math.floor(nowMs / 1000)
      const fresh = {
        token: token(identityBoundClaims(iss, identityClaims(identity), iat, iat + ttl)),
        issuedAtMs: iat * 1000,
        renewAtMs: iat * 1000 + ttl * 500
      }
      if (held !== undefined) kept.delete(who)
      else if (kept.size >= IDENTITY_TOKENS_KEPT) kept.delete(kept.keys().next().value as string)
      kept.set(who, fresh)
      return fresh.token
    }
  }
  return { alg: keys.alg, kid, jwks, jwksJson: JSON.stringify(jwks), forRequest }
}

/** base64url of the signature over an ASCII signing input (JWS: ES256 as r || s, RFC 7518 3.4). */
function signer (alg: AssertionAlg, key: KeyObject): (input: string) => string {
  if (alg === 'EdDSA') return (input) => sign(null, Buffer.from(input, 'latin1'), key).toString('base64url')
  const es256 = { key, dsaEncoding: 'ieee-p1363' as const }
  return (input) => sign('sha256', Buffer.from(input, 'latin1'), es256).toString('base64url')
}

/** A public key as a JWK with its kid (the RFC 7638 thumbprint), alg and use. */
export async function publicJwk (key: KeyObject, alg: AssertionAlg): Promise<JWK> {
  // (jose is loaded here, when a key is published: a gateway without assertions never loads it)
  const { calculateJwkThumbprint, exportJWK } = await import('jose')
  const jwk = await exportJWK(key)
  return { ...jwk, kid: await calculateJwkThumbprint(jwk, 'sha256'), alg, use: 'sig' }
}

/** The JWK Set of the keys, each key once. */
async function jwkSet (publicKeys: AssertionKeys['publicKeys']): Promise<{ keys: JWK[] }> {
  const keys: JWK[] = []
  for (const { key, alg } of publicKeys) {
    const jwk = await publicJwk(key, alg)
    if (!keys.some((k) => k.kid === jwk.kid)) keys.push(jwk)
  }
  return { keys }
}
