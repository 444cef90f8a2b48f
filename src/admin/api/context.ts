/**
 * What every route of the admin API is given: the configuration, the registry
 * store acting as the caller (every change is audited with the caller as actor),
 * and the two access helpers.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import type { Config } from '../../config/schema.js'
import { AdminStore } from '../../registry/admin-store.js'
import { auditOptions } from '../../registry/audit-log.js'
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import { ADMIN_PERMISSION, type KeyPrincipal, type Principal } from './principal.js'
import { sendForbidden } from './refusal.js'

export interface ApiContext {
  config: Config
  /**
   * the registry, written with `p` as the audit trail's actor (rotation runs its
   * WATCH on a connection of its own: AdminStore.rotateKey)
   */
  store: (p: Principal) => AdminStore
}

export function createContext (config: Config, redis: RegistryClient, keys: RedisKeys): ApiContext {
  const audit = auditOptions(config.audit)
  return {
    config,
    store: (p) => new AdminStore(redis, keys, config.keys.prefix, p.actor, audit)
  }
}

/** The signed-in caller (sign-in runs before every route). */
export function principalOf (request: FastifyRequest): Principal {
  const p = request.adminApi.principal
  if (p === undefined) throw new Error('admin API route reached without a principal')
  return p
}

/** A self principal: a personal key, so it has a user. */
export function selfUser (p: Principal): { p: KeyPrincipal, user: string } {
  if (p.kind !== 'key' || p.user === undefined) throw new Error('not a self principal')
  return { p, user: p.user }
}

/** Route hook: admin only; everyone else who signed in gets 403. */
export function requireAdmin (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  if (request.adminApi.principal?.admin === true) {
    done()
    return
  }
  request.adminApi.reason = 'missing_permission'
  request.adminApi.detail = 'admin only'
  sendForbidden(reply, ADMIN_PERMISSION)
}
