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
/**
 * With `Secure`, both names carry the `__Host-` prefix: a browser then takes such a
 * cookie only from this very origin over https, with `Path=/` and no `Domain`, so no
 * sibling subdomain and no plain-http page can plant one (a session of the attacker's,
 * or a sign-in under way of its own).
 */
export const HOST_PREFIX = '__Host-'

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

/** What a request's cookies say of one of keygate's cookies: none, one value, or more than one (`twice`). */
export type CookieRead = { id: string | undefined, twice: false } | { id: undefined, twice: true }

/**
 * The value of keygate's cookie `base` in a request's `Cookie` header(s): the `__Host-`
 * name always, the plain one only on an instance without `Secure` (`secure`: with an
 * https redirect_uri, a plain one is anyone's to plant). A request carrying the cookie
 * more than once (two values, or both names) is `twice`, and its caller refuses it: which
 * one the browser meant cannot be told, and the first one is not necessarily its own.
 */
export function readCookie (header: string | undefined, base: string, secure: boolean): CookieRead {
  if (header === undefined || header === '') return { id: undefined, twice: false }
  const names = secure ? [HOST_PREFIX + base] : [HOST_PREFIX + base, base]
  const found: string[] = []
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq === -1 || !names.includes(part.slice(0, eq).trim())) continue
    const one = parseCookie(part)
    found.push(Object.values(one)[0] ?? '')
  }
  if (found.length > 1) return { id: undefined, twice: true }
  return { id: found[0], twice: false }
}

/** The name a cookie is set under: `__Host-` with `Secure`. */
function cookieName (sso: Pick<Sso, 'secure'>, base: string): string {
  return sso.secure ? HOST_PREFIX + base : base
}

export function sessionCookie (sso: Sso, id: string | undefined): string {
  return stringifySetCookie({
    name: cookieName(sso, SESSION_COOKIE),
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
    name: cookieName(sso, LOGIN_COOKIE),
    value: id ?? '',
    httpOnly: true,
    sameSite: 'lax',
    // (a `__Host-` cookie must have Path=/)
    path: sso.secure ? '/' : '/console/sso/',
    secure: sso.secure,
    maxAge: id === undefined ? 0 : Math.floor(LOGIN_TTL_MS / 1000)
  })
}
