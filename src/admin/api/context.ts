/**
 * What every route of the admin API is given: the configuration, the registry store
 * acting as the caller (every change is audited with the caller as actor), the admin
 * rules for the caller's scope, the admin actions (every write, as the CLI makes it
 * too: src/admin/actions.ts), and the route hook that refuses a scope outright.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { parseDuration } from '../../config/duration.js'
import type { Config } from '../../config/schema.js'
import { AdminActions } from '../actions.js'
import { AdminRules, ADMIN_PERMISSION, ORG_ADMIN_PERMISSION } from '../policy/scope-rules.js'
import { AdminStore, auditOptions } from '../store/index.js'
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import { readKeysUsage, readUsage, type UsagePoint, type UsageRange, type UsageSubject } from '../../usage/reader.js'
import { adminScopeOf, type Principal } from './principal.js'
import { refuse } from './refusal.js'

export interface ApiContext {
  config: Config
  /**
   * the registry, written with `p` as the audit trail's actor (rotation runs its
   * WATCH on a connection of its own: AdminStore.rotateKey)
   */
  store: (p: Principal) => AdminStore
  /** what `p` may do, checked against that store */
  rules: (p: Principal, store: AdminStore) => AdminRules
  /** a key's or an org's request counts (src/usage/reader.ts); the route checks the scope */
  usage: (subject: UsageSubject, range: UsageRange) => Promise<UsagePoint[]>
  /** several keys' counts and owners at once (readKeysUsage); the route checks the scope of each */
  keysUsage: (ids: readonly string[], range: UsageRange) => ReturnType<typeof readKeysUsage>
}

export function createContext (config: Config, redis: RegistryClient, keys: RedisKeys): ApiContext {
  const audit = auditOptions(config.audit)
  const maxTtlMs = parseDuration(config.admin.self_service_max_ttl) as number
  return {
    config,
    store: (p) => new AdminStore(redis, keys, config.keys.prefix, p.actor, audit),
    rules: (p, store) => new AdminRules(adminScopeOf(p), store, maxTtlMs),
    usage: async (subject, range) => await readUsage(redis, keys, subject, range),
    keysUsage: async (ids, range) => await readKeysUsage(redis, keys, ids, range)
  }
}

/** The signed-in caller (sign-in runs before every route). */
export function principalOf (request: FastifyRequest): Principal {
  const p = request.adminApi.principal
  if (p === undefined) throw new Error('admin API route reached without a principal')
  return p
}

/** The caller's store and rules, and the writes (rules, checks, store, audit) as the caller, for one request. */
export function callerOf (ctx: ApiContext, request: FastifyRequest): { p: Principal, store: AdminStore, rules: AdminRules, actions: AdminActions } {
  const p = principalOf(request)
  const store = ctx.store(p)
  const rules = ctx.rules(p, store)
  return { p, store, rules, actions: new AdminActions(store, rules) }
}

/**
 * Route hook: `admin` routes refuse every other scope; `org` routes refuse a self
 * principal (the route's own rules then keep an org admin in its org).
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
