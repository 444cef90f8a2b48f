/**
 * Header sets for the fuzz tests (test/integration/fuzz/): a credential in many
 * spellings (one valid key, a revoked, unknown or malformed one, another scheme, two
 * at once), the identity prefix in every spelling (case, `_` for `-`), `Connection`
 * naming identity headers, request-steering and forwarding headers, duplicates,
 * obsolete line folding, odd casing, oversized values, more fields than the limit,
 * duplicate or missing `Host`, `Expect`, and complete bodies framed by
 * `Content-Length` or `Transfer-Encoding`.
 *
 * Every value a client invents to pass for someone else carries SPOOF, so a test can
 * tell that none of them reached an upstream.
 */
import fc from 'fast-check'

export const SPOOF = 'spoofed'

/** The keys a credential is drawn from. */
export interface Credentials {
  valid: string
  revoked: string
  unknown: string
}

/** What the credential of a header set is, for the allow oracle: only `valid` may be allowed. */
export type CredentialKind = 'valid' | 'refused' | 'none'

export interface HeaderSet {
  credential: CredentialKind
  /** header lines, each written as it is (a folded value holds its CRLF) */
  lines: string[]
  /** a complete body framed by the lines, or '' */
  body: string
  /** the set breaks a framing rule (too many or too large fields, two Host, an Expect it refuses...) */
  framing: boolean
}

interface Credential { kind: CredentialKind, lines: string[] }

function credential (c: Credentials): fc.Arbitrary<Credential> {
  const other = c.valid.endsWith('A') ? 'B' : 'A'
  const spellings = (name: string): Credential[] => [
    ['valid', `${name}: Bearer ${c.valid}`],
    ['valid', `${name}: bearer ${c.valid}`],
    ['valid', `${name}: BEARER    ${c.valid}`],
    ['refused', `${name}: Bearer ${c.revoked}`],
    ['refused', `${name}: Bearer ${c.unknown}`],
    ['refused', `${name}: Bearer ${c.valid.slice(0, -1)}${other}`],
    ['refused', `${name}: Bearer ${c.valid}x`],
    ['refused', `${name}: Basic ${Buffer.from(`u:${c.valid}`).toString('base64')}`],
    ['refused', `${name}: Bearer`],
    ['refused', `${name}: Bearer ${c.valid} ${c.valid}`],
    ['refused', `${name}: Bearer ${c.valid}, Bearer ${c.valid}`],
    ['refused', `${name}:Bearer\t${c.valid}`]
  ].map(([kind, line]) => ({ kind: kind as CredentialKind, lines: [line as string] }))
  const twice = (first: string, second: string): Credential => ({
    kind: 'refused',
    lines: [`Authorization: Bearer ${first}`, `authorization: Bearer ${second}`]
  })
  const names = fc.constantFrom('Authorization', 'authorization', 'AUTHORIZATION')
  return fc.oneof(
    { weight: 6, arbitrary: names.chain((name) => fc.constantFrom(...spellings(name))) },
    { weight: 1, arbitrary: fc.constant<Credential>({ kind: 'none', lines: [] }) },
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        twice(c.valid, c.valid), twice(c.valid, c.unknown), twice(c.unknown, c.valid)
      )
    }
  )
}

const IDENTITY_NAMES = [
  'Key-Id', 'Key-Type', 'User-Id', 'Org-Id', 'Role', 'Assertion', 'Anything', 'Meta', 'Identity', 'Env'
]
const PREFIX_SPELLINGS = ['X-Auth-', 'x-auth-', 'X-AUTH-', 'X_Auth_', 'x_auth-', 'X-auth_', 'x-AuTh-']

function spelled (name: string, how: string): string {
  switch (how) {
    case 'lower': return name.toLowerCase()
    case 'upper': return name.toUpperCase()
    case 'underscore': return name.replace(/-/g, '_')
    default: return name
  }
}

/** `X-Auth-User-Id` in one of its spellings (the rest of the name in upper, lower or mixed case, `-` or `_`) */
const identityName = fc.tuple(fc.constantFrom(...PREFIX_SPELLINGS), fc.constantFrom(...IDENTITY_NAMES),
  fc.constantFrom('as is', 'lower', 'upper', 'underscore'))
  .map(([prefix, name, how]) => prefix + spelled(name, how))

const spoofValue = fc.constantFrom(`${SPOOF}`, `${SPOOF}-admin`, `acme, ${SPOOF}`, ` ${SPOOF} `)

const identitySpoofs = fc.array(fc.tuple(identityName, spoofValue).map(([n, v]) => `${n}: ${v}`), { maxLength: 4 })

/** `Connection` naming identity headers (the gateway must not drop its own) */
const connectionNaming = fc.option(
  fc.array(identityName, { minLength: 1, maxLength: 3 }).map((names) => `Connection: ${names.join(', ')}`),
  { freq: 3 }
)

const STEERING = [
  'X-Original-URL', 'X-Rewrite-URL', 'X-Original-URI', 'X-Original-Method', 'X-Forwarded-Uri', 'X-Forwarded-Method',
  'X-Forwarded-Prefix', 'X-Forwarded-Scheme', 'X-Forwarded-Ssl', 'Front-End-Https', 'X-Real-IP', 'True-Client-IP',
  'X-Client-IP', 'X-Cluster-Client-IP', 'CF-Connecting-IP', 'Fastly-Client-IP', 'X-Forwarded-For', 'X-Forwarded-Host',
  'X-Forwarded-Proto', 'Forwarded', 'X-Request-Id', 'X-HTTP-Method-Override', 'X-Method-Override',
  'Proxy-Authorization', 'traceparent'
]
const steering = fc.array(
  fc.tuple(fc.constantFrom(...STEERING), fc.constantFrom('as is', 'lower', 'underscore'))
    .map(([name, how]) => `${spelled(name, how)}: ${SPOOF}`),
  { maxLength: 3 }
)

/** ordinary headers, duplicated and oddly cased; all harmless to forward */
const ordinary = fc.array(fc.constantFrom(
  'Accept: application/json', 'Accept: text/plain', 'X-Custom: one', 'X-Custom: two', 'cOnTeNt-TyPe: text/plain',
  'User-Agent: fuzz', 'Cookie: a=1', 'Cookie: b=2', 'X-Empty:', 'X-Spaces:    padded   ', 'Cache-Control: no-cache',
  'X-Unicode: caf\xc3\xa9', 'X-Latin1: \xe9t\xe9'
), { maxLength: 4 })

interface Framing { lines: string[], body: string, breaks: boolean }

const frame = (lines: string[], body = '', breaks = false): Framing =>
  ({ lines: ['Host: localhost', ...lines], body, breaks })
const filler = (n: number): string[] => Array.from({ length: n }, (_v, i) => `X-Filler-${i}: ${i}`)

/**
 * Framing and size: most sets keep the defaults; some break a rule the gateway refuses
 * (`breaks`); folded lines (obsolete line folding) are sent too, and whatever the parser
 * makes of them, no value they carry may reach an upstream as an identity.
 */
const framing: fc.Arbitrary<Framing> = fc.oneof(
  { weight: 10, arbitrary: fc.constant(frame([])) },
  {
    weight: 8,
    arbitrary: fc.constantFrom(
      { lines: ['HOST: LocalHost'], body: '', breaks: false },
      frame(['Content-Length: 0']),
      frame(['Content-Length: 5'], 'hello'),
      frame(['Transfer-Encoding: chunked'], '5\r\nhello\r\n0\r\n\r\n'),
      frame(['Expect: 100-continue']),
      frame(['X-Fold: one', ' two']),
      frame(['X-Auth-Role: reader', ` ${SPOOF}`]),
      frame(['X-Digits: 1', `123: ${SPOOF}`])
    )
  },
  {
    weight: 6,
    arbitrary: fc.constantFrom(
      frame(['Host: evil.example'], '', true),
      { lines: [], body: '', breaks: true },
      frame(['Expect: 200-ok'], '', true),
      frame(['Content-Length: 5', 'Transfer-Encoding: chunked'], '0\r\n\r\n', true),
      frame(['Content-Length: 1', 'Content-Length: 2'], 'x', true)
    )
  },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 17_000, max: 40_000 })
      .map((n) => frame([`X-Big: ${'a'.repeat(n)}`], '', true))
  },
  { weight: 1, arbitrary: fc.integer({ min: 101, max: 140 }).map((n) => frame(filler(n), '', true)) }
)

/** A header set (see the header of this file); the order of its lines is shuffled. */
export function headerSets (c: Credentials): fc.Arbitrary<HeaderSet> {
  return fc.tuple(credential(c), identitySpoofs, connectionNaming, steering, ordinary, framing)
    .chain(([cred, spoofs, conn, steer, plainLines, f]) => {
      // folded lines stay behind the line they continue: the shuffle moves whole fields
      const fields = [
        ...cred.lines, ...spoofs, ...(conn === null ? [] : [conn]), ...steer, ...plainLines, ...joinFolds(f.lines)
      ]
      return fc.shuffledSubarray(fields, { minLength: fields.length, maxLength: fields.length }).map((lines) => ({
        credential: cred.kind,
        lines,
        body: f.body,
        framing: f.breaks
      }))
    })
}

/** a field followed by its continuation lines, as one line with its CRLF inside */
function joinFolds (lines: string[]): string[] {
  const out: string[] = []
  for (const line of lines) {
    if ((line.startsWith(' ') || line.startsWith('\t')) && out.length > 0) out[out.length - 1] += '\r\n' + line
    else out.push(line)
  }
  return out
}

/** The request's bytes: the request line, the set's lines, `Connection: close`, the body. */
export function requestBytes (method: string, target: string, set: Pick<HeaderSet, 'lines' | 'body'>): Buffer {
  const head = `${method} ${target} HTTP/1.1\r\n${set.lines.map((l) => l + '\r\n').join('')}Connection: close\r\n\r\n`
  return Buffer.from(head + set.body, 'latin1')
}
