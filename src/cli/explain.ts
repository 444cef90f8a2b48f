/**
 * `keygate check`: the decision the gateway would take for one request, with its
 * reasons, from the function the gateway and the authorizer run (decide-request.ts:
 * the target policy, the route table, the authentication core, the stages after it), with
 * the rate limits previewed: the limits that apply are shown, never counted, so a check
 * consumes nothing (a malformed one refuses, as in the gateway).
 * It reads Redis directly (no cache), so it shows what a fresh gateway would decide.
 */
import type { Config } from '../config/schema.js'
import { ERRORS, type ErrorCode, type Reason } from '../errors.js'
import { decisionFactory } from '../decision/factory.js'
import { identityHeaders } from '../http/identity-headers.js'
import { MALFORMED, parseRateLimit } from '../config/rate-limit.js'
import { applicableLimits, previewLimiter } from '../ratelimit/limiter.js'
import { PROXIED_METHODS } from '../http/methods.js'
import { createIdentityResolver } from '../cache/create-cache.js'
import type { RegistryClient } from '../registry/redis-client.js'
import { redisKeys } from '../registry/redis-keys.js'
import { createQuotaMeter } from '../quota/meter.js'
import { QuotaScript } from '../quota/script.js'

export interface Explanation {
  allowed: boolean
  status: number | 'upstream'
  code?: ErrorCode
  reason: Reason
  method: string
  /** the path the rules see */
  path?: string
  /** the route; `forwarded_path`: the path the upstream would receive, when the route rewrites it */
  route?: { prefix: string, upstream: string, hosts?: string[], key_header?: string, forwarded_path?: string }
  key_id?: string
  key_type?: string
  user_id?: string
  org?: string
  role?: string
  /** the effective permissions: the role's, narrowed by the key's scope when it has one */
  permissions?: string[]
  /** the effective role's own permissions (shown when a scope narrows them) */
  role_permissions?: string[]
  /** the key's scope and allowed addresses, when it has them */
  scope?: string[]
  allowed_cidrs?: string[]
  /** the client address the check decided for (`--from`) */
  from?: string
  /** a refusal for want of a permission or an address: which of role, scope and address refused */
  refused_by?: Array<'role' | 'scope' | 'address'>
  rule?: { index: number, method: string, path: string, permissions: string[], org_param?: string, public?: true }
  /** the rate limits that apply (docs/rate-limits.md): `<count>/<period>`, or `malformed` */
  rate_limits?: { key?: string, role?: string, org?: string, identity?: string, anonymous?: string }
  /** the quota and credits that apply (docs/quotas.md), as they stand: checked, never spent */
  quota?: Array<{ name: string, limit: number, remaining: number, reset_s?: number }>
  /** the identity headers the upstream would receive */
  headers?: Record<string, string>
  /**
   * with shadow_rules, for a request with a key: what they would answer. `agrees`: as the live rules; else the shadow
   * rule (its index, or `none`) and both outcomes (`allow` or a reason), as the log line's `shadow` field
   */
  shadow?: { agrees: true } | { agrees: false, rule: string, live: string, shadow: string }
}

/**
 * `from`: the client address to decide for (a key bound to addresses is refused without one);
 * `key` undefined: a request without a credential (a public rule's); `host`: its Host header.
 */
export async function explain (config: Config, redis: RegistryClient, method: string, target: string,
  key: string | undefined, from?: string, host?: string): Promise<Explanation> {
  // Redis itself, no cache; the rate limits shown below, never counted
  const defaultLimit = config.rate_limits.default === undefined ? undefined : parseRateLimit(config.rate_limits.default)
  const limiter = previewLimiter(defaultLimit)
  // the quota and credits: read and checked by the gateway's script, nothing spent
  const quota = createQuotaMeter({
    script: new QuotaScript(redis),
    keys: redisKeys(config.redis.prefix),
    metrics: { outcome () {} },
    onError: config.quota.on_error,
    preview: true
  })
  const decider = decisionFactory(config, createIdentityResolver(config, redis), PROXIED_METHODS)
    .decider({ limiter, quota })
  // receive to rate limits, as the gateway decides
  const v = await decider.decideTarget(
    method,
    target,
    key === undefined ? [] : ['Authorization', `Bearer ${key}`],
    from,
    Date.now(),
    host
  )

  const out: Explanation = { allowed: false, status: 400, reason: v.ok ? 'allowed' : v.reason, method }
  const path = v.target !== undefined ? v.target.path : v.path
  if (path !== undefined) out.path = path
  if (v.target !== undefined) {
    const r = v.target.route
    out.route = { prefix: r.prefix, upstream: r.upstream }
    if (r.hosts !== undefined) out.route.hosts = [...r.hosts]
    if (r.key_header !== undefined) out.route.key_header = r.key_header
    if (r.rewrite !== undefined) out.route.forwarded_path = r.rewrite(v.target.path)
  }
  const id = v.identity
  if (!v.ok && v.keyId !== undefined) out.key_id = v.keyId
  if (from !== undefined) out.from = from
  if (id !== undefined) {
    Object.assign(out, {
      key_id: id.keyId,
      key_type: id.type,
      user_id: id.userId,
      org: id.org,
      role: id.role,
      permissions: [...id.grants.permissions]
    })
    if (id.scope !== undefined) {
      Object.assign(out, { scope: [...id.scope.permissions], role_permissions: [...id.roleGrants?.permissions ?? []] })
    }
    if (id.addresses !== undefined) out.allowed_cidrs = [...id.addresses.cidrs]
  }
  if (v.rule !== undefined) {
    const r = v.rule
    out.rule = { index: r.index, method: r.method, path: r.path, permissions: [...r.permissions] }
    if (r.orgParam !== undefined) out.rule.org_param = r.orgParam
    if (r.public) out.rule.public = true
  }
  if (!v.ok && v.reason === 'address_not_allowed') out.refused_by = ['address']
  if (!v.ok && v.reason === 'missing_permission' && id !== undefined && v.rule !== undefined) {
    const needed = v.rule.permissions
    const by: Array<'role' | 'scope'> = []
    if (!(id.roleGrants ?? id.grants).hasAll(needed)) by.push('role')
    if (id.scope !== undefined && !id.scope.hasAll(needed)) by.push('scope')
    out.refused_by = by
  }
  // rate limits: those that apply, shown, never counted
  if (id !== undefined && (v.ok || v.code === 'rate_limited')) {
    const applicable = applicableLimits(id, defaultLimit)
    const limits: NonNullable<Explanation['rate_limits']> = {}
    for (const level of ['key', 'role', 'org', 'identity'] as const) {
      const limit = applicable[level]
      if (limit !== undefined) limits[level] = limit === MALFORMED ? 'malformed' : limit.text
    }
    if (Object.keys(limits).length > 0) out.rate_limits = limits
  }
  const metered = v.quota !== undefined && 'allowances' in v.quota ? v.quota.allowances : undefined
  if (metered !== undefined && metered.length > 0) {
    out.quota = metered.map((a) => ({
      name: a.name, limit: a.limit, remaining: a.remaining, ...a.resetS === undefined ? {} : { reset_s: a.resetS }
    }))
  }
  // shadow rules: decided beside the live ones by the same core, never changing the answer
  if (config.shadow_rules.length > 0 && id !== undefined) {
    out.shadow = v.shadow === undefined ? { agrees: true } : { agrees: false, ...v.shadow }
  }
  if (!v.ok) return { ...out, status: ERRORS[v.code].status, code: v.code, reason: v.reason }
  const headersFor = (id: typeof v.identity): Record<string, string> =>
    identityHeaders(config.identity.header_prefix, id, '(generated per request)')
  if (v.identity === undefined) {
    // a public rule, no key: no credential read, no Redis; the anonymous limit per client address
    if (config.rate_limits.anonymous !== undefined) out.rate_limits = { anonymous: config.rate_limits.anonymous }
    return { ...out, allowed: true, status: 'upstream', reason: 'public', headers: headersFor(undefined) }
  }

  // headers: what the upstream would receive
  return { ...out, allowed: true, status: 'upstream', reason: 'allowed', headers: headersFor(v.identity) }
}
