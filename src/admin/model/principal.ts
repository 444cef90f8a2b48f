/**
 * Who acts on the admin wing, as the policy sees them: a scope, and for a scope narrower
 * than an admin's its org, its grants and its user (src/admin/policy/scope-rules.ts says
 * what each may do):
 *
 *   admin  `keygate:admin`, the admin token, the CLI, the hooks: everything, in every org
 *   org    `keygate:org:admin`: its own org's users and keys, within its own grants
 *   self   `keygate:keys:self` on a personal key: its own user's keys
 *
 * No wildcard grants a `keygate:` permission: a role of `*` is no administrator. A BOT key
 * has no user, so `keygate:keys:self` gives it nothing.
 */
import type { AddressList, Grants } from '../../registry/records.js'

export const ADMIN_PERMISSION = 'keygate:admin'
export const ORG_ADMIN_PERMISSION = 'keygate:org:admin'
export const SELF_PERMISSION = 'keygate:keys:self'

export type ScopeName = 'admin' | 'org' | 'self'

export type AdminScope =
  | { scope: 'admin', user?: undefined, key?: CallerKey | undefined, signedInUser?: string | undefined }
  | { scope: 'org', org: string, grants: Grants, user: string | undefined, key?: CallerKey | undefined }
  | { scope: 'self', org: string, grants: Grants, user: string, key?: CallerKey | undefined }

/**
 * The key a principal signed in with, when it did (src/admin/policy/caller-key.ts): what
 * it may not widen on itself, nor exceed in the keys it mints.
 */
export interface CallerKey {
  id: string
  /** its `allowed_cidrs`; undefined: any address */
  addresses: AddressList | undefined
  /** its `scope`; undefined: none */
  scope: Grants | undefined
  /** when it expires (epoch ms); undefined: never */
  expiresAt: number | undefined
}

/**
 * `signedInUser`: an admin's own user when it signed in as one (a personal key, an SSO
 * session); `user` stays undefined for an admin, whose writes act for no user.
 */
export function callerUser (s: AdminScope): string | undefined {
  return s.scope === 'admin' ? s.signedInUser : s.user
}

/** The admin token, the CLI, the hooks, SSO's user creation. */
export const FULL_ADMIN: AdminScope = { scope: 'admin' }

/** A signed-in key's scope from its grants (by name: no wildcard grants a `keygate:` permission); undefined: none. */
export function scopeOfGrants (grants: Grants, keyType: 'personal' | 'bot'): ScopeName | undefined {
  if (grants.has(ADMIN_PERMISSION)) return 'admin'
  if (grants.has(ORG_ADMIN_PERMISSION)) return 'org'
  if (keyType === 'personal' && grants.has(SELF_PERMISSION)) return 'self'
  return undefined
}

/** The org a refused attempt is counted under: the caller's own (an admin's: none). */
export function auditOrgOf (s: AdminScope): string | undefined {
  return s.scope === 'admin' ? undefined : s.org
}
