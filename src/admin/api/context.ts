/**
 * What every route of the admin API is given: the configuration, the admin actions of
 * the signed-in caller (src/admin/actions/: every read filtered for its scope, every
 * write audited with it as the actor), and the route hook that refuses a scope outright.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import type { Config } from '../../config/schema.js'
import type { RegistryClient } from '../../registry/redis-client.js'
import { adminActions, adminWing, type AdminActions } from '../actions/index.js'
import { ADMIN_PERMISSION, ORG_ADMIN_PERMISSION } from '../model/principal.js'
import { adminScopeOf, type Principal } from './principal.js'
import { refuse } from './refusal.js'

export interface ApiContext {
  config: Config
  /** what `p` may do, and the registry as `p` sees it */
  actions: (p: Principal) => AdminActions
}

export function createContext (config: Config, redis: RegistryClient): ApiContext {
  const wing = adminWing(config, redis)
  return { config, actions: (p) => adminActions(wing, adminScopeOf(p), p.actor) }
}

/** The signed-in caller (sign-in runs before every route). */
export function principalOf (request: FastifyRequest): Principal {
  const p = request.adminApi.principal
  if (p === undefined) throw new Error('admin API route reached without a principal')
  return p
}

/** The caller's actions, for one request. */
export function actionsOf (ctx: ApiContext, request: FastifyRequest): AdminActions {
  return ctx.actions(principalOf(request))
}

/**
 * Route hook: `admin` routes refuse every other scope; `org` routes refuse a self
 * principal (the actions then keep an org admin in its org).
 */
export function requireScope (least: 'admin' | 'org') {
  const needs = least === 'admin' ? ADMIN_PERMISSION : ORG_ADMIN_PERMISSION
  return function onRequest (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    const scope = request.adminApi.principal?.scope
    if (scope === 'admin' || (least === 'org' && scope === 'org')) {
      done()
      return
    }
    refuse(request, reply, needs, `needs ${needs}`)
  }
}

/** Route hook: admin only. */
export const requireAdmin = requireScope('admin')
