/**
 * Sign-in to the admin API: `Authorization: Bearer <credential>`, parsed exactly as
 * on the data plane. The credential is the admin token (KEYGATE_ADMIN_TOKEN, compared
 * in constant time), or a keygate key, checked by the data plane's own stages
 * (format, resolve, authenticate, address): a revoked key, a deactivated user or a
 * client outside the key's `allowed_cidrs` loses admin access exactly when it loses
 * data-plane access. Without a Bearer credential, an SSO
 * session's cookie signs in instead (createSessionSignIn).
 */
import { createHash, timingSafeEqual } from 'node:crypto'
import type { AuthFailure } from '../../decision/authenticate-request.js'
import { extractCredential } from '../../decision/extract-credential.js'
import { fromAllowedAddress } from '../../decision/stages/address.js'
import type { DecisionFactory } from '../../decision/factory.js'
import { parseKey, type KeyPrefixes } from '../../registry/key-format.js'
import { scopeOfGrants } from '../model/principal.js'
import { userActor } from '../model/actors.js'
import type { UsageRecorder } from '../../usage/last-used.js'
import { RegistryBusy } from '../../cache/read-through.js'
import { INVALID, NO_GRANTS } from '../../registry/records.js'
import type { SessionStore } from '../sso/sessions.js'
import { TOKEN_PRINCIPAL, type Principal } from './principal.js'

export type SignIn =
  | { ok: true, principal: Principal }
  /** 401 or 503, as on the data plane */
  | AuthFailure
  /**
   * a valid key granting no admin scope (keygate:admin, keygate:org:admin, keygate:keys:self),
   * or used from a client address outside its `allowed_cidrs`
   */
  | {
    ok: false,
    code: 'forbidden',
    reason: 'missing_permission' | 'address_not_allowed',
    challenge: undefined,
    keyId: string | undefined
  }

export interface SignInOptions {
  /** the admin token; undefined: token sign-in is off */
  adminToken: string | undefined
  keyPrefix: KeyPrefixes
  /** the gateway's decision (src/decision/factory.ts) */
  decisions: DecisionFactory
  /** a key that signs in is a key in use: its last_used_at is noted as on the data plane */
  usage?: UsageRecorder
}

/**
 * Which limit of failed sign-ins an attempt counts against (sign-in-limit.ts), told
 * without a lookup: `none` without a Bearer credential (no guess); `key` for a
 * credential shaped like a key (prefix, id, secret) that is not the admin token;
 * `token` for anything else (the admin token, a wrong token, a malformed credential).
 * Key failures from an address never lock the right admin token out, and the admin
 * token's own failures never lock keys out.
 */
export type SignInKind = 'none' | 'token' | 'key'

export function createSignInKind (
  o: Pick<SignInOptions,
  'adminToken' | 'keyPrefix'>
): (rawHeaders: readonly string[]) => SignInKind {
  const isAdminToken = adminTokenCheck(o.adminToken)
  return (rawHeaders) => {
    const credential = extractCredential(rawHeaders)
    if (!credential.ok) return credential.reason === 'missing_credential' ? 'none' : 'token'
    if (isAdminToken(credential.token)) return 'token'
    return parseKey(credential.token, o.keyPrefix) === 'malformed_credential' ? 'token' : 'key'
  }
}

/**
 * `client`: the client's address as `trusted_proxies` allow it (the TCP peer, or the
 * client a trusted proxy reports), as on the data plane.
 */
export function createSignIn (o: SignInOptions): (rawHeaders: readonly string[], client: string) => Promise<SignIn> {
  const authenticate = o.decisions.signIn(adminTokenCheck(o.adminToken))

  return async function signIn (rawHeaders, client) {
    const now = Date.now()
    // (no peer: a sign-in is not charged to the data plane's per-peer budget of
    // unknown-key lookups, so a forged-key flood from an admin's address cannot lock
    // the admin out; failed sign-ins have their own, stricter limit: sign-in-limit.ts)
    const auth = await authenticate(rawHeaders, undefined, now)
    if ('adminToken' in auth) return { ok: true, principal: TOKEN_PRINCIPAL }
    if (!auth.ok) return auth

    const { identity } = auth
    const scope = scopeOfGrants(identity.grants, identity.type)
    // a key's addresses hold wherever the key is used, the admin API included
    const refusal = !fromAllowedAddress(identity, client)
      ? 'address_not_allowed'
      : scope === undefined ? 'missing_permission' : undefined
    if (refusal !== undefined || scope === undefined) {
      return {
        ok: false,
        code: 'forbidden',
        reason: refusal ?? 'missing_permission',
        challenge: undefined,
        keyId: identity.keyId
      }
    }
    o.usage?.record(identity.keyId, now)
    return {
      ok: true,
      principal: {
        kind: 'key',
        keyId: identity.keyId,
        keyType: identity.type,
        user: identity.userId,
        org: identity.org,
        role: identity.role,
        permissions: identity.grants.permissions,
        grants: identity.grants,
        scope,
        actor: `key:${identity.keyId}`,
        key: {
          id: identity.keyId,
          addresses: identity.addresses,
          scope: identity.scope,
          expiresAt: identity.expiresAt
        }
      }
    }
  }
}

/**
 * Sign-in with an SSO session (the `keygate_session` cookie: src/admin/sso/): the
 * session from Redis (so every instance honours it, and sign-out ends it everywhere),
 * then its user and role through the same cache and push invalidation as a key's: a
 * user deactivated, or moved to another org than the session began in, is refused at
 * once (401), and the role as it is now gives the scope, exactly as it would to a
 * personal key of that user.
 */
export function createSessionSignIn (o: {
  sessions: SessionStore,
  decisions: DecisionFactory
}): (sessionId: string) => Promise<SignIn> {
  const refused = (code: 'unauthorized' | 'service_unavailable', reason: AuthFailure['reason']): AuthFailure =>
    ({ ok: false, code, reason, challenge: undefined, keyId: undefined })

  return async function sessionSignIn (sessionId) {
    let session, resolved
    try {
      session = await o.sessions.get(sessionId)
      if (session === undefined) return refused('unauthorized', 'unknown_session')
      resolved = await o.decisions.user(session.user, Date.now())
    } catch (err: unknown) {
      if (err instanceof RegistryBusy) return refused('service_unavailable', 'registry_busy')
      return refused('service_unavailable', 'registry_unavailable')
    }
    const { user, role } = resolved
    if (user === null) return refused('unauthorized', 'user_missing')
    if (user === INVALID) return refused('unauthorized', 'invalid_record')
    if (user.status !== 'active') return refused('unauthorized', 'user_deactivated')
    if (user.org !== session.org) return refused('unauthorized', 'org_mismatch')
    const grants = role?.grants ?? NO_GRANTS
    const scope = scopeOfGrants(grants, 'personal')
    if (scope === undefined) {
      return {
        ok: false,
        code: 'forbidden',
        reason: 'missing_permission',
        challenge: undefined,
        keyId: undefined
      }
    }
    return {
      ok: true,
      principal: {
        kind: 'session',
        user: session.user,
        org: user.org,
        role: user.role,
        permissions: grants.permissions,
        grants,
        scope,
        actor: userActor(session.user)
      }
    }
  }
}

/** Constant time: both sides are hashed to 32 bytes first, so not even the length leaks. */
function adminTokenCheck (adminToken: string | undefined): (token: string) => boolean {
  const tokenDigest = adminToken === undefined || adminToken === '' ? undefined : sha256(adminToken)
  return (token) => tokenDigest !== undefined && timingSafeEqual(sha256(token), tokenDigest)
}

function sha256 (text: string): Buffer {
  return createHash('sha256').update(text).digest()
}
