/**
 * GET /session: who signed in and what they may do (the console signs in with it):
 * the admin token, a key, or a person signed in through SSO (kind `session`), with
 * what a non-admin may give a key (`grantable`: the Generate New Key picker's; and
 * `catalogue`: the catalogue's permissions within those, so a wildcard there is offered
 * as the concrete permissions it covers).
 * DELETE /session: sign-out of an SSO session, everywhere.
 * GET /permissions: the permission catalogue, every permission the route rules
 * reference plus keygate's own three (admin only).
 */
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { parseDuration } from '../../config/duration.js'
import type { Config } from '../../config/schema.js'
import { actionsOf, principalOf, requireAdmin, type ApiContext } from './context.js'
import { ADMIN_PERMISSION, ORG_ADMIN_PERMISSION, SELF_PERMISSION } from './principal.js'
import { NoQuery } from './schemas.js'
import { badRequest } from './refusal.js'
import { readCookie, SESSION_COOKIE, sessionCookie, type Sso } from '../sso/index.js'

const closed = { additionalProperties: false } as const
const Str = Type.String()
const OptStr = Type.Optional(Str)

const Session = Type.Object({
  principal: Type.Union([
    Type.Object({ kind: Type.Literal('token') }, closed),
    Type.Object({
      kind: Type.Literal('key'),
      key_id: Str,
      key_type: Str,
      user: OptStr,
      org: Str,
      role: Str,
      permissions: Type.Array(Str)
    }, closed),
    /** a person signed in through SSO (docs/sso.md) */
    Type.Object({
      kind: Type.Literal('session'),
      user: Str,
      org: Str,
      role: Str,
      permissions: Type.Array(Str)
    }, closed)
  ]),
  /** `admin` (every org), `org` (the key's org), `self` (the key's user's keys) */
  scope: Type.Union([Type.Literal('admin'), Type.Literal('org'), Type.Literal('self')]),
  /** scope `admin` */
  admin: Type.Boolean(),
  /** scope `self` */
  self: Type.Boolean(),
  /** scopes `org` and `self`: the longest a BOT key they create may live (admin.self_service_max_ttl), in seconds */
  bot_key_max_ttl_s: Type.Optional(Type.Integer({ minimum: 1 })),
  /** scopes `org` and `self`: the caller's org's key policy (`key_max_ttl`), in seconds, when it has one */
  org_key_max_ttl_s: Type.Optional(Type.Integer({ minimum: 0 })),
  /**
   * scopes `org` and `self`: the permissions the caller may put in a key's scope (its
   * own effective grants: its role's, narrowed by its key's scope); an admin may give any
   */
  grantable: Type.Optional(Type.Array(Str)),
  /** scopes `org` and `self`: the permission catalogue's entries within `grantable` (a wildcard's concrete ones) */
  catalogue: Type.Optional(Type.Array(Str))
}, closed)
const PermissionList = Type.Object({ permissions: Type.Array(Str) }, closed)

type SessionView = Static<typeof Session>

export function sessionRoutes (app: FastifyInstance, ctx: ApiContext, config: Config, sso: Sso | undefined): void {
  const botKeyMaxTtlS = Math.floor((parseDuration(config.admin.self_service_max_ttl) as number) / 1000)
  // precomputed: the rules do not change while the process runs
  const catalogue = { permissions: permissionCatalogue(config) }
  app.get('/session', {
    schema: {
      summary: 'Who is signed in, and with what scope',
      tags: ['session'],
      querystring: NoQuery,
      response: { 200: Session }
    }
  }, async (request): Promise<SessionView> => {
    const p = principalOf(request)
    const scope = { scope: p.scope, admin: p.scope === 'admin', self: p.scope === 'self' }
    if (p.kind === 'token') return { principal: { kind: 'token' }, ...scope }
    // the caller's org's key policy, so a front end offers only the expiries it allows
    // (an admin, who makes keys in any org, reads each org's from GET /orgs)
    const orgCap = p.scope === 'admin' ? undefined : await actionsOf(ctx, request).ownKeyCap()
    return {
      principal: p.kind === 'session'
        ? { kind: 'session', user: p.user, org: p.org, role: p.role, permissions: [...p.permissions] }
        : {
            kind: 'key',
            key_id: p.keyId,
            key_type: p.keyType,
            user: p.user,
            org: p.org,
            role: p.role,
            permissions: [...p.permissions]
          },
      ...scope,
      // (so a front end offers only the expiries and the scopes the API accepts)
      ...(p.scope === 'admin'
        ? {}
        : {
            bot_key_max_ttl_s: botKeyMaxTtlS,
            grantable: [...p.grants.permissions],
            catalogue: catalogue.permissions.filter((permission) => p.grants.has(permission))
          }),
      ...(orgCap === undefined ? {} : { org_key_max_ttl_s: Math.floor(orgCap / 1000) })
    }
  })

  // sign-out: the session ends on every instance, and the browser forgets its cookie
  app.delete('/session', {
    schema: { summary: 'Sign out: end the console\'s SSO session', tags: ['session'], querystring: NoQuery }
  }, async (request, reply) => {
    const p = principalOf(request)
    const id = sso === undefined ? undefined : readCookie(request.headers.cookie, SESSION_COOKIE, sso.secure).id
    if (p.kind !== 'session' || id === undefined || sso === undefined) {
      throw badRequest('signed in with a credential, not a session: nothing to sign out of')
    }
    await sso.sessions.end(id)
    return await reply.code(204).header('set-cookie', sessionCookie(sso, undefined)).send()
  })

  app.get(
    '/permissions',
    {
      onRequest: requireAdmin,
      schema: {
        summary: 'List the permissions the configured rules name',
        tags: ['roles'],
        querystring: NoQuery,
        response: { 200: PermissionList }
      }
    },
    async () => catalogue
  )
}

function permissionCatalogue (config: Config): string[] {
  const all = new Set([ADMIN_PERMISSION, ORG_ADMIN_PERMISSION, SELF_PERMISSION])
  for (const rule of config.rules) for (const p of rule.permissions) all.add(p)
  return [...all].sort()
}
