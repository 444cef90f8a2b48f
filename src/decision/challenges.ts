/**
 * The RFC 6750 `WWW-Authenticate` value of each refusal that carries one (401 and
 * 403): part of the decision, so every front end sends the same challenge.
 */
const REALM = 'Bearer realm="keygate"'

export const challenges = {
  /** no credential, or another scheme */
  none: REALM,
  /** a Bearer credential that is malformed, duplicated, unknown, revoked, expired... */
  invalidToken: `${REALM}, error="invalid_token"`,
  /** valid key, not enough permission; `scope` only when a rule matched */
  insufficientScope: (scope?: string) => scope === undefined
    ? `${REALM}, error="insufficient_scope"`
    : `${REALM}, error="insufficient_scope", scope="${scope}"`
}
