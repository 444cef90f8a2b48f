/**
 * What every action works with: the store acting as the principal (its actor on every
 * change), the principal's scope as the policy sees it, and the self-service cap; and
 * how a write runs (`write`): its reads under WATCH, the policy's decision, one
 * transaction with its audit entry, and a refusal counted in the audit trail's
 * refusals under the caller's own org (an org admin reads what its members attempted;
 * another org learns nothing of them).
 */
import { parseDuration } from '../../config/duration.js'
import type { Config } from '../../config/schema.js'
import type { RegistryClient } from '../../registry/redis-client.js'
import { redisKeys, type RedisKeys } from '../../registry/redis-keys.js'
import { AdminError, type ErrorDetail } from '../model/errors.js'
import { auditOrgOf, type AdminScope } from '../model/principal.js'
import { AuditLog, auditOptions, DEFAULT_AUDIT_OPTIONS, type AuditOptions } from '../store/audit-log.js'
import { watching, type StoreContext, type Watch } from '../store/transactions.js'
import { type KeyPrefixes, keyPrefixesOf } from '../../registry/key-format.js'

/** The registry the admin wing works on, whoever acts: built once, the actions built from it per principal. */
export interface AdminWing {
  redis: RegistryClient
  keys: RedisKeys
  /** keys' prefix (`kg_`): what a key looks like, to recognise one where it does not belong */
  /** keys' prefixes (`keyPrefixesOf`), live first: what a key looks like, to recognise one where it does not belong */
  keyPrefix: KeyPrefixes
  /** the longest a BOT key created by an org or self principal lives (`admin.self_service_max_ttl`) */
  selfServiceMaxTtlMs: number
  /** `keys.max_per_user` and `keys.purge_after` (defaults: 100, 90 days) */
  keyBounds?: KeyBounds | undefined
  audit?: AuditOptions | undefined
  /** `webhooks.allow_private_targets` (docs/webhooks.md) */
  allowPrivateTargets?: boolean | undefined
}

/** How many live keys a user owns at most, and how long a dead key's record is kept. */
export interface KeyBounds {
  maxPerUser: number
  purgeAfterMs: number
}

export const DEFAULT_KEY_BOUNDS: KeyBounds = { maxPerUser: 100, purgeAfterMs: 90 * 86_400_000 }

/** The wing as the configuration describes it. */
export function adminWing (config: Config, redis: RegistryClient): AdminWing {
  return {
    redis,
    keys: redisKeys(config.redis.prefix),
    keyPrefix: keyPrefixesOf(config.keys),
    selfServiceMaxTtlMs: parseDuration(config.admin.self_service_max_ttl) as number,
    keyBounds: { maxPerUser: config.keys.max_per_user, purgeAfterMs: parseDuration(config.keys.purge_after) as number },
    audit: auditOptions(config.audit),
    allowPrivateTargets: config.webhooks.allow_private_targets
  }
}

export interface ActionContext {
  store: StoreContext
  scope: AdminScope
  selfServiceMaxTtlMs: number
  keyBounds: KeyBounds
  allowPrivateTargets: boolean
}

/** The actions' context for one principal: `actor` is what the audit trail records (`key:<id>`, `cli:<name>`, ...). */
export function actionContext (wing: AdminWing, scope: AdminScope, actor: string): ActionContext {
  const audit = new AuditLog(wing.redis, wing.keys, wing.keyPrefix, actor, wing.audit ?? DEFAULT_AUDIT_OPTIONS)
  return {
    store: { redis: wing.redis, keys: wing.keys, keyPrefix: wing.keyPrefix, actor, audit },
    scope,
    selfServiceMaxTtlMs: wing.selfServiceMaxTtlMs,
    keyBounds: wing.keyBounds ?? DEFAULT_KEY_BOUNDS,
    allowPrivateTargets: wing.allowPrivateTargets ?? false
  }
}

/** A write's result, with what the caller should know though nothing was refused (an org with no record). */
export interface Warned<T> {
  result: T
  warnings: ErrorDetail[]
}

/**
 * One write: `fn` reads what it needs through the Watch, asks the policy, and commits
 * one transaction (refused, see `audited`).
 */
export async function write<T> (
  a: ActionContext,
  action: string,
  target: string,
  fn: (w: Watch) => Promise<T>
): Promise<T> {
  return await audited(a, action, target, async () => await watching(a.store, fn))
}

/**
 * Runs a write; a refusal (an AdminError, the policy's or the registry's) is counted in
 * the audit trail's refusals (its notes: `denied: <why>` or `error: <why>`), then
 * rethrown; a failure to count it never hides it.
 */
export async function audited<T> (a: ActionContext, action: string, target: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err: unknown) {
    if (err instanceof AdminError) await countRefusal(a, action, target, err).catch(() => {})
    throw err
  }
}

async function countRefusal (a: ActionContext, action: string, target: string, err: AdminError): Promise<void> {
  for (const note of err.notes) {
    const result = `${note.result}: ${note.why ?? err.message}`
    await a.store.audit.refused(note.action ?? action, note.target ?? target, result, auditOrgOf(a.scope))
  }
}

/** The names of the caller's own user and org (what the scope rules read of a narrower principal). */
export function callerNames (s: AdminScope): { user: string | undefined, org: string | undefined } {
  return s.scope === 'admin' ? { user: undefined, org: undefined } : { user: s.user, org: s.org }
}
