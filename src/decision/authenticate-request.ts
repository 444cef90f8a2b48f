/**
 * The stages from credential to authenticate (STAGES, stages.ts) in one function, the
 * authentication every front end runs: the data plane's gate, the admin sign-in and
 * `keygate check` (and so they cannot drift):
 *
 *   credential     exactly one `Authorization: Bearer <token68>`   extract-credential.ts
 *   key format     prefix, id, secret, checksum, locally            ../registry/key-format.ts
 *                  (with `keys.accept_imported`, a token in no keygate format is an
 *                  imported key's: named by its SHA-256, cached like a native key,
 *                  else read in one round trip, docs/imports.md)
 *   records        key -> user -> role, cache else one round trip   src/cache/resolve-identity.ts
 *   authenticate   secret, status, expiry, user, org                decide.ts
 *
 * The result is synchronous when every record is cached (no promise on the hot path),
 * a promise otherwise. A refusal names its status, its reason for the log and its
 * RFC 6750 challenge; what the caller may do (the rule, an admin scope) is the
 * caller's next step.
 */
import type { Reason } from '../errors.js'
import type { AuthMeter } from '../metrics/auth-metrics.js'
import { authenticate } from './decide.js'
import type { Identity } from './identity.js'
import { challenges } from './challenges.js'
import { extractCredential, extractCredentialOrKeyHeader } from './extract-credential.js'
import { parseKey, type KeyPrefixes } from '../registry/key-format.js'
import { hash } from 'node:crypto'
import { RegistryBusy, RegistryUnavailable } from '../cache/read-through.js'
import type { IdentityResolver, Resolved, ResolvedImport } from '../cache/resolve-identity.js'

export type Authentication =
  | { ok: true, identity: Identity }
  | AuthFailure

export interface AuthFailure {
  ok: false
  code: 'unauthorized' | 'service_unavailable'
  reason: Reason
  /** the `WWW-Authenticate` value (none with a 503) */
  challenge: string | undefined
  /** the key id, once the key's format was good (for the log line) */
  keyId: string | undefined
}

/** The admin token (admin sign-in only): a credential that is not a key. */
export const ADMIN_TOKEN = { ok: true, adminToken: true } as const

export interface AuthenticatorOptions {
  keyPrefix: KeyPrefixes
  resolver: IdentityResolver
  /** decisions from the cache are counted; those that wait for Redis are timed too */
  meter?: AuthMeter | undefined
  /** `keys.accept_imported`: a token not in keygate's format is looked up as an imported key */
  acceptImported?: boolean | undefined
  /** admin sign-in: whether a Bearer token is the admin token (checked before the key format) */
  isAdminToken?: ((token: string) => boolean) | undefined
}

/** `keyHeader`: the route's `key_header` in lower case, where the key may travel too (extract-credential.ts) */
export type AuthenticateRequest = (
  rawHeaders: readonly string[], peer: string | undefined, now: number, keyHeader?: string
) => Authentication | Promise<Authentication>
/** With `isAdminToken` (the admin sign-in), the admin token is a result of its own. */
export type AuthenticateSignIn = (rawHeaders: readonly string[], peer: string | undefined, now: number) =>
  Authentication | typeof ADMIN_TOKEN | Promise<Authentication>

// the refusals before a key id is known: one object each, nothing allocated per request
const MISSING: AuthFailure = failure('unauthorized', 'missing_credential', challenges.none, undefined)
const MALFORMED: AuthFailure = failure('unauthorized', 'malformed_credential', challenges.invalidToken, undefined)
const BAD_CHECKSUM: AuthFailure = failure('unauthorized', 'bad_checksum', challenges.invalidToken, undefined)
const TWO_CREDENTIALS: AuthFailure = failure('unauthorized', 'two_credentials', challenges.invalidToken, undefined)

export function createAuthenticator (
  o: AuthenticatorOptions & { isAdminToken: (token: string) => boolean }
): AuthenticateSignIn
export function createAuthenticator (o: AuthenticatorOptions): AuthenticateRequest
export function createAuthenticator (o: AuthenticatorOptions): AuthenticateSignIn {
  const { resolver, meter } = o

  /**
   * An imported key (docs/imports.md): the SHA-256 of the whole token names it, and the
   * whole token is its secret (the record's `hash` is that same SHA-256, compared in
   * constant time as a native key's secret is). Cached like a native key (a cached one
   * is decided synchronously, without Redis); otherwise one Redis read at most, charged
   * to the unknown-key budget. The key id is known (for the log) once the token was found.
   */
  function imported (token: string, peer: string | undefined, now: number): Authentication | Promise<Authentication> {
    // hashed once: the hex names the lookup, the bytes are compared with the record's digest
    const digest = hash('sha256', token, 'binary')
    const found = resolver.resolveImported(Buffer.from(digest, 'latin1').toString('hex'), now, peer)
    if (!(found instanceof Promise)) {
      if (found.records.limited !== true) meter?.fromCache()
      return decided(
        authenticate({ id: found.keyId ?? '', secret: token }, found.records, now, digest),
        found.keyId ?? undefined
      )
    }
    const lookupAt = performance.now()
    return found.then(
      ({ keyId, records }: ResolvedImport) => {
        if (records.limited !== true) meter?.fromRedis(performance.now() - lookupAt)
        return decided(
          authenticate({ id: keyId ?? '', secret: token }, records, Date.now(), digest),
          keyId ?? undefined
        )
      },
      (err: unknown) => {
        meter?.fromRedis(performance.now() - lookupAt)
        if (err instanceof RegistryBusy) return failure('service_unavailable', 'registry_busy', undefined, undefined)
        if (err instanceof RegistryUnavailable) {
          return failure('service_unavailable', 'registry_unavailable', undefined, undefined)
        }
        throw err
      }
    )
  }

  return function authenticateRequest (rawHeaders, peer, now, keyHeader?: string) {
    // credential: exactly one Bearer credential (or the route's key header)
    const credential = keyHeader === undefined
      ? extractCredential(rawHeaders)
      : extractCredentialOrKeyHeader(rawHeaders, keyHeader)
    if (!credential.ok) {
      return credential.reason === 'missing_credential'
        ? MISSING
        : credential.reason === 'two_credentials' ? TWO_CREDENTIALS : MALFORMED
    }
    if (o.isAdminToken?.(credential.token) === true) return ADMIN_TOKEN

    // key format: format and checksum, locally: a malformed key never reaches the cache or Redis
    const key = parseKey(credential.token, o.keyPrefix)
    if (key === 'malformed_credential') {
      if (o.acceptImported !== true || credential.token.length > IMPORTED_MAX_LENGTH) return MALFORMED
      return imported(credential.token, peer, now)
    }
    if (key === 'bad_checksum') return BAD_CHECKSUM

    // records: key record -> user -> role, from the cache or in one Redis round trip
    const resolved = resolver.resolve(key.id, now, peer)
    if (!(resolved instanceof Promise)) {
      if (resolved.limited !== true) meter?.fromCache()
      return decided(authenticate(key, resolved, now), key.id)
    }
    const lookupAt = performance.now()
    return resolved.then(
      (records: Resolved) => {
        meter?.fromRedis(performance.now() - lookupAt)
        return decided(authenticate(key, records, Date.now()), key.id)
      },
      (err: unknown) => {
        meter?.fromRedis(performance.now() - lookupAt)
        if (err instanceof RegistryBusy) return failure('service_unavailable', 'registry_busy', undefined, key.id)
        if (err instanceof RegistryUnavailable) {
          return failure('service_unavailable', 'registry_unavailable', undefined, key.id)
        }
        throw err
      }
    )
  }
}

/**
 * The longest token looked up as an imported key: longer ones are refused without Redis
 * (Kong's and Unkey's keys are far shorter).
 */
export const IMPORTED_MAX_LENGTH = 512

/** authenticate: who is calling, the identity, or a 401 naming its reason. */
function decided (who: ReturnType<typeof authenticate>, keyId: string | undefined): Authentication {
  return who.ok ? who : failure('unauthorized', who.reason, challenges.invalidToken, keyId)
}

function failure (
  code: AuthFailure['code'],
  reason: Reason,
  challenge: string | undefined,
  keyId: string | undefined
): AuthFailure {
  return { ok: false, code, reason, challenge, keyId }
}
