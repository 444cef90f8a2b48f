/**
 * Sign-in to the admin API: `Authorization: Bearer <credential>`, parsed exactly as
 * on the data plane. The credential is the admin token (KEYGATE_ADMIN_TOKEN, compared
 * in constant time), or a keygate key, checked by the data plane's own stages
 * (format, resolve, authenticate): a revoked key or a deactivated user loses admin
 * access exactly when it loses data-plane access.
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { Reason } from '../../errors.js'
import { authenticate } from '../../pipeline/decide.js'
import { challenges } from '../../pipeline/deny.js'
import { extractCredential } from '../../pipeline/extract-credential.js'
import { RegistryUnavailable, type IdentityResolver } from '../../pipeline/resolve-identity.js'
import { parseKey } from '../../registry/key-material.js'
import { scopeOfGrants } from '../../registry/admin-rules.js'
import { TOKEN_PRINCIPAL, type Principal } from './principal.js'
import type { UsageRecorder } from '../../registry/usage-recorder.js'

export type SignIn =
  | { ok: true, principal: Principal }
  | { ok: false, code: 'unauthorized', reason: Reason, challenge: string, keyId?: string }
  /** a valid key granting no admin scope (keygate:admin, keygate:org:admin, keygate:keys:self) */
  | { ok: false, code: 'forbidden', reason: 'missing_permission', keyId: string }
  | { ok: false, code: 'service_unavailable', reason: 'registry_unavailable', keyId: string }

export interface SignInOptions {
  /** the admin token; undefined: token sign-in is off */
  adminToken: string | undefined
  keyPrefix: string
  resolver: IdentityResolver
  /** a key that signs in is a key in use: its last_used_at is noted as on the data plane */
  usage?: UsageRecorder
}

export function createSignIn (o: SignInOptions): (rawHeaders: readonly string[]) => Promise<SignIn> {
  const tokenDigest = o.adminToken === undefined || o.adminToken === '' ? undefined : sha256(o.adminToken)

  /** Constant time: both sides are hashed to 32 bytes first, so not even the length leaks. */
  function isAdminToken (token: string): boolean {
    return tokenDigest !== undefined && timingSafeEqual(sha256(token), tokenDigest)
  }

  return async function signIn (rawHeaders) {
    const credential = extractCredential(rawHeaders)
    if (!credential.ok) {
      return { ok: false, code: 'unauthorized', reason: credential.reason, challenge: credential.invalidToken ? challenges.invalidToken : challenges.none }
    }
    if (isAdminToken(credential.token)) return { ok: true, principal: TOKEN_PRINCIPAL }

    const key = parseKey(credential.token, o.keyPrefix)
    if (typeof key === 'string') return { ok: false, code: 'unauthorized', reason: key, challenge: challenges.invalidToken }

    let resolved
    try {
      resolved = await o.resolver.resolve(key.id)
    } catch (err: unknown) {
      if (err instanceof RegistryUnavailable) return { ok: false, code: 'service_unavailable', reason: 'registry_unavailable', keyId: key.id }
      throw err
    }
    const now = Date.now()
    const who = authenticate(key, resolved, now)
    if (!who.ok) return { ok: false, code: 'unauthorized', reason: who.reason, challenge: challenges.invalidToken, keyId: key.id }

    const { identity } = who
    const scope = scopeOfGrants(identity.grants, identity.type)
    if (scope === undefined) return { ok: false, code: 'forbidden', reason: 'missing_permission', keyId: key.id }
    o.usage?.record(key.id, now)
    return {
      ok: true,
      principal: {
        kind: 'key',
        keyId: identity.keyId,
        keyType: identity.type,
        user: identity.userId,
        org: identity.org,
        role: identity.role,
        permissions: resolved.role?.permissions ?? [],
        grants: identity.grants,
        scope,
        actor: `key:${identity.keyId}`
      }
    }
  }
}

function sha256 (text: string): Buffer {
  return createHash('sha256').update(text).digest()
}
