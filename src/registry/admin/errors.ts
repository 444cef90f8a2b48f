/**
 * A refused or failed admin operation, raised by the rules and the store alike. `kind`
 * says what went wrong, and each front end maps it: the CLI to exit status 1 (the
 * message on stderr), the admin API to 400, 403, 404 or 409. Messages name no front
 * end's syntax (no CLI flags, no JSON fields): every front end shows them.
 */
export class AdminError extends Error {
  override readonly name = 'AdminError'
  /** `needs`: for `forbidden`, the permission that would allow it (a 403's challenge scope) */
  constructor (message: string, readonly kind: AdminErrorKind = 'invalid', readonly needs?: string) {
    super(message)
  }
}

/**
 * `invalid`: bad input; `forbidden`: the caller's scope does not allow it; `not_found`:
 * an addressed record does not exist, or is outside the caller's scope; `conflict`:
 * refused in the registry's current state
 */
export type AdminErrorKind = 'invalid' | 'forbidden' | 'not_found' | 'conflict'

/** `.catch()` for a lookup: a missing record is `value`, anything else is rethrown. */
export function ifMissing<T> (value: T): (err: unknown) => T {
  return (err) => {
    if (err instanceof AdminError && err.kind === 'not_found') return value
    throw err
  }
}
