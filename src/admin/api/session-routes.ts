/**
 * GET /session: who signed in and what they may do (the console signs in with it),
 * with what a non-admin may give a key (`grantable`: the Generate New Key picker's).
 * GET /permissions: the permission catalogue, every permission the route rules
 * reference plus keygate's own three (admin only).
 */
import type { FastifyInstance } from 'fastify'
import { parseDuration } from '../../config/duration.js'
import type { Config } from '../../config/schema.js'
import { principalOf, requireAdmin } from './context.js'
import { ADMIN_PERMISSION, ORG_ADMIN_PERMISSION, SELF_PERMISSION } from './principal.js'
import { NoQuery, PermissionList, Session, type SessionView } from './schemas.js'

export function sessionRoutes (app: FastifyInstance, config: Config): void {
  const botKeyMaxTtlS = Math.floor((parseDuration(config.admin.self_service_max_ttl) as number) / 1000)
  app.get('/session', { schema: { querystring: NoQuery, response: { 200: Session } } }, async (request): Promise<SessionView> => {
    const p = principalOf(request)
    const scope = { scope: p.scope, admin: p.scope === 'admin', self: p.scope === 'self' }
    if (p.kind === 'token') return { principal: { kind: 'token' }, ...scope }
    return {
      principal: { kind: 'key', key_id: p.keyId, key_type: p.keyType, user: p.user, org: p.org, role: p.role, permissions: [...p.permissions] },
      ...scope,
      // (so a front end offers only the expiries and the scopes the API accepts)
      ...(p.scope === 'admin' ? {} : { bot_key_max_ttl_s: botKeyMaxTtlS, grantable: [...p.grants.permissions] })
    }
  })

  // precomputed: the rules do not change while the process runs
  const catalogue = { permissions: permissionCatalogue(config) }
  app.get('/permissions', { onRequest: requireAdmin, schema: { querystring: NoQuery, response: { 200: PermissionList } } }, async () => catalogue)
}

function permissionCatalogue (config: Config): string[] {
  const all = new Set([ADMIN_PERMISSION, ORG_ADMIN_PERMISSION, SELF_PERMISSION])
  for (const rule of config.rules) for (const p of rule.permissions) all.add(p)
  return [...all].sort()
}
