/**
 * Org records (admin only): a display name, a rate limit shared by every key of the
 * org, and `key_max_ttl`, the longest any key created or rotated in the org lives
 * (key-expiry.ts applies it). An org exists as a name on users and keys whether or not
 * it has a record; the record only adds these fields.
 */
import { parseDuration } from '../../config/duration.js'
import { AdminError } from '../model/errors.js'
import { ORG_NAME_MAX } from '../model/limits.js'
import type { AdminScope } from '../model/principal.js'
import { checkName, checkRateLimit } from './names.js'
import { requireAdmin } from './scope-rules.js'

/** A field not given is kept as it is; `rateLimit: null` removes the org's limit, `keyMaxTtl: null` its key policy. */
export interface OrgInput {
  name?: string | undefined
  rateLimit?: string | null | undefined
  /** a duration (`90d`): every key created or rotated in the org expires within it */
  keyMaxTtl?: string | null | undefined
}

export interface OrgPut {
  /** the fields to set */
  fields: Record<string, string>
  /** the fields to remove */
  removed: string[]
  detail: Record<string, string>
}

/**
 * Why a `key_max_ttl` is not one (a positive duration), or undefined: the org command's and the registry file's
 * check.
 */
export function keyMaxTtlProblem (value: string): string | undefined {
  return (parseDuration(value) ?? 0) > 0 ? undefined : `invalid key_max_ttl "${value}" (a duration such as 90d, 24h)`
}

export function decidePutOrg (s: AdminScope, org: string, input: OrgInput): OrgPut {
  requireAdmin(s, 'an org\'s record')
  checkName('org', org)
  if (input.rateLimit === undefined && input.name === undefined && input.keyMaxTtl === undefined) {
    throw new AdminError('nothing to set: give a rate limit, a key max TTL (or none to remove one) or a name')
  }
  if (typeof input.rateLimit === 'string') checkRateLimit(input.rateLimit)
  const ttlProblem = typeof input.keyMaxTtl === 'string' ? keyMaxTtlProblem(input.keyMaxTtl) : undefined
  if (ttlProblem !== undefined) {
    throw new AdminError(ttlProblem, 'invalid', undefined, [{ field: 'key_max_ttl', reason: ttlProblem }])
  }
  if (input.name !== undefined && input.name.length > ORG_NAME_MAX) {
    throw new AdminError(`the org name is longer than ${ORG_NAME_MAX} characters`)
  }
  const fields: Record<string, string> = {}
  if (input.name !== undefined) fields.name = input.name
  if (typeof input.rateLimit === 'string') fields.rate_limit = input.rateLimit
  if (typeof input.keyMaxTtl === 'string') fields.key_max_ttl = input.keyMaxTtl
  const removed = [
    ...input.rateLimit === null ? ['rate_limit'] : [],
    ...input.keyMaxTtl === null ? ['key_max_ttl'] : []
  ]
  return { fields, removed, detail: { ...fields, ...Object.fromEntries(removed.map((f) => [f, ''])) } }
}
