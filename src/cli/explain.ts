/**
 * `keygate check`: the decision the gateway would take for one request, with its
 * reasons, from the functions the gateway runs, in the same order: the target
 * policy, the route table (stages 1-2), the authentication core (3-6), the rule (7),
 * the rate limits that apply (8: shown, never counted, so a check consumes nothing).
 * It reads Redis directly (no cache), so it shows what a fresh gateway would decide.
 */
import { NO_TRACKING } from '../cache/invalidation.js'
import { RecordCache } from '../cache/record-cache.js'
import type { Config } from '../config/schema.js'
import { ERRORS, type ErrorCode, type Reason } from '../errors.js'
import { createAuthenticator } from '../pipeline/authenticate-request.js'
import { authorize } from '../pipeline/decide.js'
import { identityHeaders } from '../pipeline/identity-headers.js'
import { MALFORMED, parseRateLimit } from '../ratelimit/limit.js'
import { compileRules } from '../pipeline/match-rule.js'
import { IdentityResolver } from '../pipeline/resolve-identity.js'
import { compileRouteTable } from '../pipeline/route-table.js'
import { checkTarget } from '../pipeline/target-policy.js'
import { RedisHealth, type RegistryClient } from '../registry/redis-client.js'
import { redisKeys } from '../registry/redis-keys.js'
import { RegistryReader } from '../registry/registry-reader.js'

export interface Explanation {
  allowed: boolean
  status: number | 'upstream'
  code?: ErrorCode
  reason: Reason
  method: string
  /** the path the rules see and the upstream would receive */
  path?: string
  route?: { prefix: string, upstream: string }
  key_id?: string
  key_type?: string
  user_id?: string
  org?: string
  role?: string
  permissions?: string[]
  rule?: { index: number, method: string, path: string, permissions: string[], org_param?: string }
  /** the rate limits that apply (docs/rate-limits.md): `<count>/<period>`, or `malformed` */
  rate_limits?: { key?: string, role?: string, org?: string }
  /** the identity headers the upstream would receive */
  headers?: Record<string, string>
}

export async function explain (config: Config, redis: RegistryClient, method: string, target: string, key: string): Promise<Explanation> {
  const out: Explanation = { allowed: false, status: 400, reason: 'bad_path', method }
  const deny = (code: ErrorCode, reason: Reason): Explanation => ({ ...out, allowed: false, status: ERRORS[code].status, code, reason })

  // 1. target policy; 2. route prefix
  const t = checkTarget(target)
  if (!t.ok) return deny('bad_request', 'bad_path')
  out.path = t.path
  const route = compileRouteTable(config.routes)(t.path)
  if (route === undefined) return deny('not_found', 'no_route')
  out.route = { prefix: route.prefix, upstream: route.upstream }

  // 3-6. who is calling, from Redis itself
  const resolver = new IdentityResolver({
    reader: new RegistryReader(redis, redisKeys(config.redis.prefix), config.redis.prefix),
    cache: new RecordCache(16),
    cacheEnabled: false,
    tracking: NO_TRACKING,
    health: new RedisHealth(redis),
    ttlMs: 0,
    negativeTtlMs: 0,
    staleIfErrorMs: 0
  })
  const authenticate = createAuthenticator({ keyPrefix: config.keys.prefix, resolver })
  const auth = await authenticate(['Authorization', `Bearer ${key}`], undefined, Date.now())
  if (!auth.ok) {
    if (auth.keyId !== undefined) out.key_id = auth.keyId
    return deny(auth.code, auth.reason)
  }
  const id = auth.identity
  Object.assign(out, { key_id: id.keyId, key_type: id.type, user_id: id.userId, org: id.org, role: id.role, permissions: [...id.grants.permissions] })

  // 7. the rule
  const match = compileRules(config.rules)(method, t.path)
  if (match !== null) {
    const r = match.rule
    out.rule = { index: r.index, method: r.method, path: r.path, permissions: [...r.permissions] }
    if (r.orgParam !== undefined) out.rule.org_param = r.orgParam
  }
  const may = authorize(id, match)
  if (!may.ok) return deny('forbidden', may.reason)

  // 8. the rate limits that apply (a malformed one allows nothing)
  const own = id.keyLimit ?? (config.rate_limits.default === undefined ? undefined : parseRateLimit(config.rate_limits.default))
  const limits: NonNullable<Explanation['rate_limits']> = {}
  for (const [level, limit] of [['key', own], ['role', id.roleLimit], ['org', id.orgLimit]] as const) {
    if (limit !== undefined) limits[level] = limit === MALFORMED ? 'malformed' : limit.text
  }
  if (Object.keys(limits).length > 0) out.rate_limits = limits
  if (own === MALFORMED || id.roleLimit === MALFORMED || id.orgLimit === MALFORMED) return deny('rate_limited', 'invalid_record')

  // 10. what the upstream would receive
  return { ...out, allowed: true, status: 'upstream', reason: 'allowed', headers: identityHeaders(config.identity.header_prefix, id, '(generated per request)') }
}
