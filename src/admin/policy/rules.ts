/**
 * What any admin input must be, whoever sends it and in whichever scope: names,
 * permissions, key ownership, and the shape of a key creation. The store applies
 * these to every write; the admin plane's scope rules (src/admin/policy/) apply them before their own;
 * a front end may check its own syntax first, but never decides these again.
 */
import { isTypedActor, ownerOf } from '../model/actors.js'
import { AdminError } from '../model/errors.js'
import { parseRateLimit, RATE_LIMIT_HELP } from '../../config/rate-limit.js'
import { grantProblems } from '../../config/permission.js'
import { cidrProblems, NAME } from '../../registry/records.js'

export { NAME }

/** the longest key name (also the admin API's schemas) */
export const KEY_NAME_MAX = 200
/** how long a rotated key keeps working by default (`keys rotate`, POST /keys/:id/rotate) */
export const DEFAULT_GRACE_MS = 24 * 3_600_000

/** Why a name is refused; undefined: it is fine. */
export function nameProblem (what: string, value: string): string | undefined {
  return NAME.test(value) ? undefined : `invalid ${what} "${value}" (letters, digits and _.@:- ; up to 128 characters)`
}

export function checkName (what: string, value: string): void {
  const problem = nameProblem(what, value)
  if (problem !== undefined) throw new AdminError(problem)
}

/** A role's permissions, in the one grammar (src/config/permission.ts). */
export function checkPermissions (permissions: readonly string[]): void {
  const problems = grantProblems(permissions)
  if (problems.length > 0) throw new AdminError(problems.join('; '), 'invalid', undefined, problems.map((reason) => ({ field: 'permissions', reason })))
}

/** The keys a user owns: their personal keys, and the BOT keys they created (`created_by` = `user:<id>`). */
export function ownsKey (user: string, key: { type: string, user?: string | undefined, created_by?: string | undefined }): boolean {
  return key.user === user || (key.type === 'bot' && ownerOf(key.created_by) === user)
}

/** A `rate_limit` as every record holds it: `<count>/<period>` (src/config/rate-limit.ts, the one parser). */
export function checkRateLimit (text: string): void {
  const problem = rateLimitProblem(text)
  if (problem !== undefined) throw new AdminError(problem)
}

/** Why a `rate_limit` is refused; undefined: it is fine. */
export function rateLimitProblem (text: string): string | undefined {
  return parseRateLimit(text) === undefined ? `invalid rate limit "${text}": ${RATE_LIMIT_HELP}` : undefined
}

/** The owner fields of a key creation. */
export interface KeyOwnerFields {
  type: 'personal' | 'bot'
  user?: string | undefined
  role?: string | undefined
  org?: string | undefined
}

/** A personal key takes its org and role from its user; a BOT key has no user. */
export function checkKeyExclusions (r: KeyOwnerFields): void {
  if (r.type === 'personal' && (r.role !== undefined || r.org !== undefined)) throw new AdminError('a personal key takes its org and role from its user: no role or org')
  if (r.type === 'bot' && r.user !== undefined) throw new AdminError('a BOT key has no user')
}

/** A personal key needs its user; a BOT key its role and its org (that they exist is the store's to check). */
export function checkKeyRequirements (r: KeyOwnerFields): void {
  if (r.type === 'personal' && r.user === undefined) throw new AdminError('a personal key needs a user')
  if (r.type === 'bot') {
    const missing = [r.role === undefined ? 'a role' : '', r.org === undefined ? 'an org' : ''].filter((m) => m !== '')
    if (missing.length > 0) throw new AdminError(`a BOT key needs ${missing.join(' and ')}`)
  }
}

/** The key's name and its recorded creator (a typed actor: actors.ts). */
export function checkKeyLabels (r: { name?: string | undefined, createdBy?: string | undefined }): void {
  if (r.name !== undefined && r.name.length > KEY_NAME_MAX) throw new AdminError(`the key name is longer than ${KEY_NAME_MAX} characters`)
  if (r.createdBy !== undefined && !isTypedActor(r.createdBy)) throw new AdminError(`invalid creator "${r.createdBy}" (expected user:<id>, key:<id>, cli:<name> or admin-token)`)
}

/** the most permissions in a key's scope, and addresses in its allowed_cidrs */
export const KEY_RESTRICTION_MAX = 256

/** What a key may be narrowed to: `scope` (permissions) and `allowed_cidrs`; undefined: not given. */
export interface KeyRestrictionInput {
  scope?: readonly string[] | undefined
  allowedCidrs?: readonly string[] | undefined
}

/**
 * A key's scope in the permission grammar and its addresses as IPv4/IPv6 CIDRs (the
 * gateway's own parsers, records.ts), every bad entry named. An empty list is refused:
 * `none` (null) removes a restriction, and an empty scope would be a key that does nothing.
 */
export function checkKeyRestriction (r: KeyRestrictionInput): void {
  const details: Array<{ field: string, reason: string }> = []
  for (const [field, list, problems] of [['scope', r.scope, grantProblems], ['allowed_cidrs', r.allowedCidrs, cidrProblems]] as const) {
    if (list === undefined) continue
    if (list.length === 0) details.push({ field, reason: `an empty ${field}: give at least one entry, or none to remove it` })
    if (list.length > KEY_RESTRICTION_MAX) details.push({ field, reason: `more than ${KEY_RESTRICTION_MAX} entries in ${field}` })
    for (const reason of problems(list)) details.push({ field, reason })
  }
  if (details.length > 0) throw new AdminError(details.map((d) => d.reason).join('; '), 'invalid', undefined, details)
}
