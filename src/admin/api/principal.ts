/**
 * Who is calling the admin API, and what they may do.
 *
 *   admin   the admin token, or a key whose role grants `keygate:admin` (`*` does):
 *           full control
 *   self    a personal key whose role grants `keygate:keys:self`: its own user's keys
 *           (personal keys for that user; BOT keys in its org with a role no broader
 *           than its own permissions; showing and revoking the keys it may see)
 *
 * A BOT key has no user, so `keygate:keys:self` gives it nothing. A key granting
 * neither is refused (403) on every route.
 */
import type { Grants } from '../../registry/records.js'

export const ADMIN_PERMISSION = 'keygate:admin'
export const SELF_PERMISSION = 'keygate:keys:self'

export interface TokenPrincipal {
  kind: 'token'
  admin: true
  self: false
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
  admin: boolean
  self: boolean
  actor: string
}

export type Principal = TokenPrincipal | KeyPrincipal

export const TOKEN_PRINCIPAL: TokenPrincipal = { kind: 'token', admin: true, self: false, actor: 'admin-token' }

/** Whether every permission of a role is covered by the caller's own grants (no escalation through a BOT key). */
export function withinGrants (grants: Grants, permissions: readonly string[]): boolean {
  return grants.hasAll(permissions)
}
