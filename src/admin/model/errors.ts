/**
 * A refused or failed admin operation, raised by the policy (and by the store for what
 * Redis itself reports: a missing record, a WATCH conflict). `kind` says what went
 * wrong, and each front end maps it: the CLI to exit status 1 (the message on stderr),
 * the admin API to 400, 403, 404 or 409 (CODE_OF_KIND). Messages name no front end's
 * syntax (no CLI flags, no JSON fields): every front end shows them.
 */
import type { ErrorCode } from '../../errors.js'

/**
 * One problem of a refused write, safe to show the caller: `field`, the input it is
 * about (as the admin API names it), when there is one; `reason`, a sentence that holds
 * no secret and nothing of an org the caller may not see.
 */
export interface ErrorDetail {
  field?: string
  reason: string
}

/**
 * How a refused write is counted in the audit trail's refusals: `denied: <why>` (the
 * caller's scope does not allow it) or `error: <why>` (the input, or the registry's
 * state). `why` is the refusal's message unless given; `action` and `target` are the
 * refused write's own unless given (an import counts each refused record as the key
 * creation it would have been).
 */
export interface RefusalNote {
  result: 'denied' | 'error'
  why?: string
  action?: string
  target?: string
}

export class AdminError extends Error {
  override readonly name = 'AdminError'
  /**
   * `needs`: for `forbidden`, the permission that would allow it (a 403's challenge scope);
   * `details`: each problem, safe to show (without them, the API shows the message for a
   * refusal of the input or of the registry's state, and nothing more for a 404);
   * `audit`: how a refused write is counted (one note, or several)
   */
  constructor (
    message: string,
    readonly kind: AdminErrorKind = 'invalid',
    readonly needs?: string,
    readonly details?: readonly ErrorDetail[],
    readonly audit: RefusalNote['result'] | readonly RefusalNote[] = 'error'
  ) {
    super(message)
  }

  /** The notes a refused write leaves in the audit trail's refusals. */
  get notes (): readonly RefusalNote[] {
    return typeof this.audit === 'string' ? [{ result: this.audit }] : this.audit
  }
}

/**
 * `invalid`: bad input; `forbidden`: the caller's scope does not allow it; `not_found`:
 * an addressed record does not exist, or is outside the caller's scope; `conflict`:
 * refused in the registry's current state
 */
export type AdminErrorKind = 'invalid' | 'forbidden' | 'not_found' | 'conflict'

/** The error catalogue's code for each kind (the admin API's status; the CLI's `--json` error). */
export const CODE_OF_KIND = {
  invalid: 'bad_request', forbidden: 'forbidden', not_found: 'not_found', conflict: 'conflict'
} as const satisfies Record<AdminErrorKind, ErrorCode>

/** `.catch()` for a lookup: a missing record is `value`, anything else is rethrown. */
export function ifMissing<T> (value: T): (err: unknown) => T {
  return (err) => {
    if (err instanceof AdminError && err.kind === 'not_found') return value
    throw err
  }
}
