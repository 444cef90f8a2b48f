/**
 * Signing in as yourself (docs/sso.md): what the admin listener needs for SSO, built
 * once. The flow (oidc.ts) and the person's match (match.ts) are used by the routes
 * (routes.ts); the sessions (sessions.ts) by the routes and by the admin API's sign-in
 * (../api/sign-in.ts), which honours a `keygate_session` cookie whether or not this
 * instance has `sso.oidc` configured (a session begun on another instance is a session).
 */
import { parseCookie, stringifySetCookie } from 'cookie'
import { parseDuration } from '../../config/duration.js'
import type { Config } from '../../config/schema.js'
import type { RegistryClient } from '../../registry/redis-client.js'
import { redisKeys } from '../../registry/redis-keys.js'
import { createMatcher, createSignInAudit, type Match } from './match.js'
import type { Claims, OidcFlow } from './oidc.js'
import { LOGIN_TTL_MS, SessionStore } from './sessions.js'

export const SESSION_COOKIE = 'keygate_session'
/** the sign-in under way: sent back by the provider's redirect, a cross-site navigation, hence `SameSite=Lax` */
export const LOGIN_COOKIE = 'keygate_sso_login'

export interface Sso {
  sessions: SessionStore
  /** absent: `sso.oidc` is not configured on this instance (no sign-in starts here) */
  oidc: {
    flow: OidcFlow
    match: (claims: Claims) => Promise<Match>
    /** the sign-in's audit entry, with the claim that matched */
    audit: (m: Match & { ok: true }) => Promise<void>
    displayName: string
  } | undefined
  /** the `Secure` attribute: with an https redirect_uri */
  secure: boolean
  ttlMs: number
}

export async function createSso (config: Config, redis: RegistryClient): Promise<Sso> {
  const keys = redisKeys(config.redis.prefix)
  const ttlMs = parseDuration(config.sso.session_ttl) as number
  const o = config.sso.oidc
  // (the relying party, openid-client with it, is loaded only with sso.oidc configured)
  const flow = o === undefined ? undefined : (await import('./oidc.js')).createOidcFlow(o)
  return {
    sessions: new SessionStore(redis, keys, ttlMs),
    oidc: o === undefined || flow === undefined
      ? undefined
      : {
          flow,
          match: createMatcher(config, redis),
          audit: createSignInAudit(config, redis),
          displayName: o.display_name
        },
    secure: o !== undefined && o.redirect_uri.startsWith('https:'),
    ttlMs
  }
}

/** A cookie's value from a request's `Cookie` header; undefined when absent. */
export function cookieValue (header: string | undefined, name: string): string | undefined {
  if (header === undefined || header === '') return undefined
  return parseCookie(header)[name]
}

export function sessionCookie (sso: Sso, id: string | undefined): string {
  return stringifySetCookie({
    name: SESSION_COOKIE,
    value: id ?? '',
    httpOnly: true,
    sameSite: 'strict',
    path: '/',
    secure: sso.secure,
    maxAge: id === undefined ? 0 : Math.floor(sso.ttlMs / 1000)
  })
}

export function loginCookie (sso: Sso, id: string | undefined): string {
  return stringifySetCookie({
    name: LOGIN_COOKIE,
    value: id ?? '',
    httpOnly: true,
    sameSite: 'lax',
    path: '/console/sso/',
    secure: sso.secure,
    maxAge: id === undefined ? 0 : Math.floor(LOGIN_TTL_MS / 1000)
  })
}
