/**
 * Who is calling the admin API, and in which scope (the rules: src/admin/policy/scope-rules.ts):
 *
 *   admin   the admin token, or a key whose role grants `keygate:admin` by name:
 *           everything, in every org
 *   org     a key whose role grants `keygate:org:admin` by name: its own org's users
 *           and keys, within its own permissions; no roles
 *   self    a personal key whose role grants `keygate:keys:self`: its own user's keys
 *
 * A person signed in through SSO (src/admin/sso/) is a session principal: their
 * user's role gives it its scope exactly as it would a personal key of that user.
 *
 * No wildcard grants a `keygate:` permission: a role of `*` is no administrator. A BOT
 * key has no user, so `keygate:keys:self` gives it nothing. A key granting none of the
 * three is refused (403) on every route.
 */
import {
  ADMIN_PERMISSION,
  ORG_ADMIN_PERMISSION,
  SELF_PERMISSION,
  type AdminScope,
  type CallerKey,
  type ScopeName
} from '../model/principal.js'
import type { Grants } from '../../registry/records.js'

export { ADMIN_PERMISSION, ORG_ADMIN_PERMISSION, SELF_PERMISSION }

export interface TokenPrincipal {
  kind: 'token'
  scope: 'admin'
  /** what the audit trail records as the actor */
  actor: 'admin-token'
}

export interface KeyPrincipal {
  kind: 'key'
  keyId: string
  keyType: 'personal' | 'bot'
  /** personal keys only */
  user: string | undefined
  org: string
  /** the effective role (BOT: the key's; personal: its user's) */
  role: string
  permissions: readonly string[]
  grants: Grants
  scope: ScopeName
  actor: string
  /** the key's own restrictions and expiry: what it neither widens nor exceeds in what it mints */
  key: CallerKey
}

/** A person signed in through SSO: what a personal key of their user would be, without a key. */
export interface SessionPrincipal {
  kind: 'session'
  user: string
  org: string
  /** the user's role, as it is now */
  role: string
  permissions: readonly string[]
  grants: Grants
  scope: ScopeName
  /** `user:<id>`: what the session does (and the keys it creates) is the user's */
  actor: string
}

export type Principal = TokenPrincipal | KeyPrincipal | SessionPrincipal

export const TOKEN_PRINCIPAL: TokenPrincipal = { kind: 'token', scope: 'admin', actor: 'admin-token' }

/** The principal as the admin policy sees it. */
export function adminScopeOf (p: Principal): AdminScope {
  if (p.kind === 'token') return { scope: 'admin' }
  const key = p.kind === 'key' ? p.key : undefined
  if (p.scope === 'admin') return { scope: 'admin', key, signedInUser: p.user }
  if (p.scope === 'org') return { scope: 'org', org: p.org, grants: p.grants, user: p.user, key }
  if (p.user === undefined) throw new Error('a self principal without a user')
  return { scope: 'self', org: p.org, grants: p.grants, user: p.user, key }
}
