/**
 * The assertion's claims as JSON text, built by concatenation in a fixed order rather
 * than by serialising an object per request. Safe because every value is either a
 * number the gateway computed or a string passed through JSON.stringify (ids, org,
 * role, method and path come from the registry or the client; whatever they hold, they
 * stay one JSON string). Pure; docs/assertion.md has the claim table.
 */
import type { Identity } from '../decision/identity.js'

/** The header that carries the assertion: the identity prefix + `Assertion`, lower-cased (`x-auth-assertion`). */
export function assertionHeaderName (prefix: string): string {
  return prefix.toLowerCase() + 'assertion'
}

/** `sub`: the user id of a personal key, `bot:<keyId>` for a BOT key. */
export function subjectOf (id: Identity): string {
  return id.type === 'personal' && id.userId !== undefined ? id.userId : `bot:${id.keyId}`
}

/**
 * The claims that describe who is calling, without the braces: `"sub":..,...,"role":..`;
 * then, for a key of an identity, `identity` (`{"id","external_id"}`), and `meta` (the
 * key's over the identity's: a JSON object keygate wrote itself, records' meta.ts).
 */
export function identityClaims (id: Identity): string {
  return `"sub":${JSON.stringify(subjectOf(id))},"key_id":${JSON.stringify(id.keyId)},` +
    `"key_type":${JSON.stringify(id.type)},"org":${JSON.stringify(id.org)},"role":${JSON.stringify(id.role)}` +
    (id.env === 'test' ? ',"env":"test"' : ',"env":"live"') +
    (id.identityId === undefined
      ? ''
      : `,"identity":{"id":${JSON.stringify(id.identityId)},"external_id":${JSON.stringify(id.externalId ?? '')}}`) +
    (id.meta === undefined ? '' : `,"meta":${id.meta.json}`)
}

/** `"iss":"<issuer>",`, computed once per configuration. */
export function issuerClaim (issuer: string): string {
  return `"iss":${JSON.stringify(issuer)},`
}

/** The claims of a request-bound token: identity, method, path (no query), request id, times. */
export function requestClaims (
  iss: string, identity: string, method: string, path: string, requestId: string, iat: number, exp: number
): string {
  return `{${iss}${identity},"htm":${JSON.stringify(method)},"htu":${JSON.stringify(path)},` +
    `"jti":${JSON.stringify(requestId)},"iat":${iat},"exp":${exp}}`
}

/** The claims of an identity-bound token: no method, path or request id. */
export function identityBoundClaims (iss: string, identity: string, iat: number, exp: number): string {
  return `{${iss}${identity},"iat":${iat},"exp":${exp}}`
}

/** The protected header, in the order `alg`, `kid`, `typ`. */
export function protectedHeader (alg: string, kid: string): string {
  return JSON.stringify({ alg, kid, typ: 'JWT' })
}
