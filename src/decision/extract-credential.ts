/**
 * The credential stage: exactly one `Authorization` header, scheme `Bearer` (any case), one or
 * more spaces, one token68 (RFC 9110 section 11). Pure. Reads the raw header list,
 * because node keeps only the first of duplicated `Authorization` headers.
 *
 * A route with a `key_header` (docs/routing.md) also takes the key as that header's whole
 * value: exactly one such header, one token68. Both it and `Authorization`: refused (two
 * credentials, whatever `Authorization` holds). The query string is never read.
 */
export type Extracted =
  | { ok: true, token: string }
  /** no Authorization header, or another scheme: a challenge without `error` */
  | { ok: false, reason: 'missing_credential', invalidToken: false }
  /** a Bearer credential (or something unparsable) that is not one token68 */
  | { ok: false, reason: 'malformed_credential', invalidToken: true }
  /** the key in `Authorization` and in the route's key header at once */
  | { ok: false, reason: 'two_credentials', invalidToken: true }

const MISSING: Extracted = { ok: false, reason: 'missing_credential', invalidToken: false }
const MALFORMED: Extracted = { ok: false, reason: 'malformed_credential', invalidToken: true }
const TWO: Extracted = { ok: false, reason: 'two_credentials', invalidToken: true }

const CREDENTIALS = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)(?: +([^ ].*))?$/
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/

export function extractCredential (rawHeaders: readonly string[]): Extracted {
  let value: string | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length === 13 && (name === 'authorization' || name.toLowerCase() === 'authorization')) {
      if (value !== undefined) return MALFORMED
      value = rawHeaders[i + 1] as string
    }
  }
  if (value === undefined) return MISSING
  // the usual spelling, `Bearer <token68>`, read without the general pattern (the same result)
  if (value.startsWith('Bearer ')) {
    const token = value.slice(7)
    if (TOKEN68.test(token)) return { ok: true, token }
  }
  const m = CREDENTIALS.exec(value.trim())
  if (m === null) return MALFORMED
  if ((m[1] as string).toLowerCase() !== 'bearer') return MISSING
  const token = m[2]
  if (token === undefined || !TOKEN68.test(token)) return MALFORMED
  return { ok: true, token }
}

/** The credential of a route with a key header (`keyHeader`: its name in lower case). */
export function extractCredentialOrKeyHeader (rawHeaders: readonly string[], keyHeader: string): Extracted {
  let authorization = false
  let value: string | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase()
    if (name === 'authorization') authorization = true
    else if (name === keyHeader) {
      if (value !== undefined) return MALFORMED
      value = rawHeaders[i + 1] as string
    }
  }
  if (value === undefined) return extractCredential(rawHeaders)
  if (authorization) return TWO
  return TOKEN68.test(value) ? { ok: true, token: value } : MALFORMED
}
