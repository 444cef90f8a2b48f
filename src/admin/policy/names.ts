/**
 * What any admin input must be, whoever sends it and in whichever scope: names, a
 * role's permissions (the one grammar, src/config/permission.ts), a rate limit (the one
 * parser, src/config/rate-limit.ts), a quota and credits (src/config/quota.ts), a user's
 * id. A front end may check its own syntax
 * first, but never decides these again.
 */
import { grantProblems } from '../../config/permission.js'
import { parseRateLimit, RATE_LIMIT_HELP } from '../../config/rate-limit.js'
import { CREDITS_HELP, parseQuota, QUOTA_HELP } from '../../config/quota.js'
import { NAME } from '../../registry/records.js'
import { AdminError, type ErrorDetail } from '../model/errors.js'
import { refuseAny, type Problem } from './refusals.js'

export { NAME }

/** Why a name is refused; undefined: it is fine. */
export function nameProblem (what: string, value: string): string | undefined {
  return NAME.test(value) ? undefined : `invalid ${what} "${value}" (letters, digits and _.@:- ; up to 128 characters)`
}

export function checkName (what: string, value: string): void {
  const problem = nameProblem(what, value)
  if (problem !== undefined) throw new AdminError(problem)
}

/** A name's problem as a write's problem, about `field`. */
export function nameProblems (field: string, what: string, value: string): Problem[] {
  const reason = nameProblem(what, value)
  return reason === undefined ? [] : [{ field, reason, kind: 'invalid' }]
}

/** Why a `rate_limit` is refused (`<count>/<period>`, as every record holds it); undefined: it is fine. */
export function rateLimitProblem (text: string): string | undefined {
  return parseRateLimit(text) === undefined ? `invalid rate limit "${text}": ${RATE_LIMIT_HELP}` : undefined
}

export function checkRateLimit (text: string): void {
  const problem = rateLimitProblem(text)
  if (problem !== undefined) throw new AdminError(problem)
}

/** Why a `quota` is refused (`<count>/<day|week|month>`); undefined: it is fine. */
export function quotaProblem (text: string): string | undefined {
  return parseQuota(text) === undefined ? `invalid quota "${text}": ${QUOTA_HELP}` : undefined
}

export function checkQuota (text: string): void {
  const problem = quotaProblem(text)
  if (problem !== undefined) throw new AdminError(problem, 'invalid', undefined, [{ field: 'quota', reason: problem }])
}

/** Why credits given (a record's, or an addition) are refused; `min` 1 for an addition. */
export function creditsProblem (n: number, min = 0): string | undefined {
  return Number.isSafeInteger(n) && n >= min && n <= 999_999_999_999_999
    ? undefined
    : `invalid credits ${String(n)}: ${min === 0 ? CREDITS_HELP : 'an addition is a whole number from 1'}`
}

export function checkCredits (n: number, field = 'credits', min = 0): void {
  const problem = creditsProblem(n, min)
  if (problem !== undefined) throw new AdminError(problem, 'invalid', undefined, [{ field, reason: problem }])
}

/** A role's permissions, every bad one named. */
export function checkPermissions (permissions: readonly string[]): void {
  refuseAny(grantProblems(permissions).map((reason) => ({ field: 'permissions', reason, kind: 'invalid' })))
}

/** A role's name and permissions, every bad one named. */
export function roleShapeProblems (name: string, permissions: readonly string[]): ErrorDetail[] {
  return [
    ...nameProblems('name', 'role', name),
    ...grantProblems(permissions).map((reason) => ({ field: 'permissions', reason }))
  ]
    .map(({ field, reason }) => ({ field, reason }))
}

/**
 * A user's id and org, in themselves (their role's existence is the caller's to check, against a snapshot or a file).
 */
export function userShape (id: string, org: string): Problem[] {
  return [...nameProblems('id', 'user id', id), ...botIdProblems(id), ...nameProblems('org', 'org', org)]
}

export function userShapeProblems (id: string, org: string): ErrorDetail[] {
  return userShape(id, org).map(({ field, reason }) => ({ field, reason }))
}

/**
 * A user id never starts with `bot:` (in any case): that is the signed assertion's
 * `sub` of a BOT key, so such a user's personal keys would be asserted as that BOT key.
 */
function botIdProblems (id: string): Problem[] {
  if (!id.toLowerCase().startsWith('bot:')) return []
  return [{
    field: 'id',
    reason: `invalid user id "${id}": an id starting with "bot:" names a BOT key in signed assertions`,
    kind: 'invalid'
  }]
}
