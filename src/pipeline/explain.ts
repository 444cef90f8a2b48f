/**
 * `keygate check`: the decision the gateway would take for one request, with its
 * reasons, built from the same stage functions the gateway runs, in the same order.
 * It reads Redis directly (no cache), so it shows what a fresh gateway would decide.
 */
import type { Config } from '../config/schema.js'
import { ERRORS, type ErrorCode, type Reason } from '../errors.js'
import { parseKey } from '../registry/key-material.js'
import { authenticate, authorize } from './decide.js'
import { extractCredential } from './extract-credential.js'
import { identityHeaders } from './identity-headers.js'
import { isUnderPrefix, type RuleMatcher } from './match-rule.js'
import { RegistryUnavailable, type IdentityResolver } from './resolve-identity.js'
import { checkTarget } from './target-policy.js'

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
  /** the identity headers the upstream would receive */
  headers?: Record<string, string>
}

export async function explain (
  config: Config, matchRule: RuleMatcher, resolver: IdentityResolver,
  method: string, target: string, key: string
): Promise<Explanation> {
  const out: Explanation = { allowed: false, status: 400, reason: 'bad_path', method }
  const deny = (code: ErrorCode, reason: Reason): Explanation => ({ ...out, allowed: false, status: ERRORS[code].status, code, reason })

  // 1. target policy, then route prefix
  const t = checkTarget(target)
  if (!t.ok) return deny('bad_request', 'bad_path')
  out.path = t.path
  const route = config.routes
    .filter((r) => isUnderPrefix(r.prefix, t.path))
    .sort((a, b) => b.prefix.length - a.prefix.length)[0]
  if (route === undefined) return deny('not_found', 'no_route')
  out.route = { prefix: route.prefix, upstream: route.upstream }

  // 2-3. credential and key format
  const credential = extractCredential(['Authorization', `Bearer ${key}`])
  if (!credential.ok) return deny('unauthorized', credential.reason)
  const parsed = parseKey(credential.token, config.keys.prefix)
  if (typeof parsed === 'string') return deny('unauthorized', parsed)
  out.key_id = parsed.id

  // 4-6. records, then who is calling
  let records
  try {
    records = await resolver.resolve(parsed.id)
  } catch (err: unknown) {
    if (err instanceof RegistryUnavailable) return deny('service_unavailable', 'registry_unavailable')
    throw err
  }
  const who = authenticate(parsed, records, Date.now())
  if (!who.ok) return deny('unauthorized', who.reason)
  const id = who.identity
  Object.assign(out, { key_type: id.type, user_id: id.userId, org: id.org, role: id.role, permissions: [...(records.role?.permissions ?? [])] })

  // 7. the rule
  const match = matchRule(method, t.path)
  if (match !== null) {
    const r = match.rule
    out.rule = { index: r.index, method: r.method, path: r.path, permissions: [...r.permissions] }
    if (r.orgParam !== undefined) out.rule.org_param = r.orgParam
  }
  const may = authorize(id, match)
  if (!may.ok) return deny('forbidden', may.reason)

  // 8. what the upstream would receive
  return { ...out, allowed: true, status: 'upstream', reason: 'allowed', headers: identityHeaders(config.identity.header_prefix, id, '(generated per request)') }
}
