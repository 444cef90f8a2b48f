/**
 * How the policy refuses: an AdminError whose `kind` each front end maps, and whose
 * `audit` says how the refused write is counted: `denied` for what the caller's scope
 * does not allow (or may not see), `error` for bad input or the registry's state.
 */
import { AdminError, type AdminErrorKind, type ErrorDetail } from '../model/errors.js'
import { ADMIN_PERMISSION, ORG_ADMIN_PERMISSION, type AdminScope } from '../model/principal.js'

/** One problem of a write, with the kind of refusal it makes. */
export type Problem = ErrorDetail & { kind: Exclude<AdminErrorKind, 'forbidden'> }

/** The permission a 403 names by default: the next scope up from the caller's. */
export function neededBy (s: AdminScope): string {
  return s.scope === 'self' ? ORG_ADMIN_PERMISSION : ADMIN_PERMISSION
}

/** A refusal by the caller's scope (audited as `denied: <why>`); a 403 names `needs`, or the next scope up. */
export function denied (
  s: AdminScope,
  kind: 'forbidden' | 'not_found',
  why: string,
  needs?: string,
  details?: ErrorDetail[]
): AdminError {
  return new AdminError(why, kind, kind === 'forbidden' ? needs ?? neededBy(s) : undefined, details, 'denied')
}

/**
 * Runs a visibility check inside a write: for a caller narrower than an admin, its 404
 * is a refusal by scope (audited as `denied`), answered exactly as a missing record.
 */
export function denyingReads<T> (s: AdminScope, fn: () => T): T {
  try {
    return fn()
  } catch (err: unknown) {
    if (err instanceof AdminError && err.kind === 'not_found' && s.scope !== 'admin') {
      throw new AdminError(err.message, err.kind, err.needs, err.details, 'denied')
    }
    throw err
  }
}

/**
 * Refuses with every problem at once: a malformed field first (400), then a missing record (404), then a state (409).
 */
export function refuseAny (problems: readonly Problem[]): void {
  if (problems.length === 0) return
  const kinds = new Set(problems.map((p) => p.kind))
  const kind = kinds.has('invalid') ? 'invalid' : kinds.has('not_found') ? 'not_found' : 'conflict'
  const details = problems.map(({ field, reason }) => field === undefined ? { reason } : { field, reason })
  throw new AdminError(problems.map((p) => p.reason).join('; '), kind, undefined, details)
}
