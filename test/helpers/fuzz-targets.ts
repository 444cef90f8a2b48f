/**
 * Request targets for the fuzz tests (test/integration/fuzz/), as byte strings (one
 * character a byte, written with Buffer.from(target, 'latin1')). They are built from
 * every spelling the path policy knows (src/decision/target-policy.ts, the cases of
 * path-cases.ts): unreserved escapes in both cases of hex, dot segments plain, encoded,
 * half-encoded and double-encoded, separators raw and encoded, `;`, NUL and controls raw
 * and encoded, invalid and non-UTF-8 escapes, raw bytes past ASCII, the route prefix in
 * other cases and spellings, keys and their encodings inside the path and the query,
 * and the fixed cases of path-cases.ts whole.
 */
import fc from 'fast-check'
import { ACCEPTED_TARGETS, DECODED_RULE_TARGETS, REFUSED_TARGETS } from './path-cases.js'

/** `%XX` of each byte of `text`, in upper- or lower-case hex */
export function percentEncode (text: string, lower = false): string {
  const hex = [...Buffer.from(text, 'latin1')].map((b) => '%' + b.toString(16).padStart(2, '0')).join('')
  return lower ? hex : hex.toUpperCase()
}

const UNRESERVED_CHARS = [...'ABCXYZabcxyz0189-._~']

const words = fc.constantFrom(
  'users', 'orgs', 'acme', 'globex', 'open', 'x', 'file.json', 'v1', 'api', 'admin', 'a-b_c~d'
)
const plain = fc.stringMatching(/^[A-Za-z0-9\-._~]{1,5}$/)
const unreservedEscape = fc.tuple(fc.constantFrom(...UNRESERVED_CHARS), fc.boolean())
  .map(([c, lower]) => percentEncode(c, lower))
const subDelims = fc.constantFrom('!', '$', '&', "'", '(', ')', '*', '+', ',', '=', ':', '@')
const dots = fc.constantFrom(
  '.', '..', '...', '%2e', '%2E', '%2e%2e', '%2E%2e', '.%2e', '%2e.', '%252e', '%252E%252e', '%25252e',
  '..foo', 'foo..', '.hidden'
)
const separators = fc.constantFrom(
  '%2F', '%2f', '%5C', '%5c', '\\', ';', '%3B', '%3b', '%252F', '%255c', '%25252f', ';jsessionid=1'
)
const controls = fc.constantFrom(
  '%00', '%0A', '%0d', '%09', '%1f', '%7F', '%7f', '%2500', '%250a',
  '\x00', '\x01', '\x09', '\x0b', '\x1b', '\x7f', '\x85', '\r', '\n', '\r\n'
)
const badEscapes = fc.constantFrom('%', '%4', '%zz', '%G1', '%%', '%2', '%u002e')
const utf8 = fc.constantFrom(
  '%C3%A9', '%c3%a9', '%C3', '%FF', '%ED%A0%80', '%C0%AF', '%E2%82%AC', '%F0%9F%94%91', '\xc3\xa9', '\xff',
  '%20', ' ', '#frag', '%23', '%3F', '[', ']', '{', '|', '"', '<', '^', '`'
)

export interface KeyPieces {
  /** whole keys that may appear in a target: their plain and encoded forms are drawn */
  keys: readonly string[]
}

function keyPieces (keys: readonly string[]): fc.Arbitrary<string> {
  if (keys.length === 0) return plain
  const hows = fc.constantFrom('plain', 'upper', 'lower', 'underscore', 'twice')
  return fc.tuple(fc.constantFrom(...keys), hows).map(([key, how]) => {
    switch (how) {
      case 'plain': return key
      case 'upper': return percentEncode(key)
      case 'lower': return percentEncode(key, true)
      case 'underscore': return key.replace('_', '%5F')
      default: return percentEncode(key).replace(/%/g, '%25')
    }
  })
}

function piece (keys: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: words },
    { weight: 4, arbitrary: plain },
    { weight: 3, arbitrary: unreservedEscape },
    { weight: 2, arbitrary: subDelims },
    { weight: 2, arbitrary: dots },
    { weight: 2, arbitrary: separators },
    { weight: 1, arbitrary: controls },
    { weight: 1, arbitrary: badEscapes },
    { weight: 2, arbitrary: utf8 },
    { weight: 1, arbitrary: keyPieces(keys) }
  )
}

function segment (keys: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 12, arbitrary: fc.array(piece(keys), { minLength: 1, maxLength: 3 }).map((ps) => ps.join('')) },
    { weight: 1, arbitrary: fc.constant('') }
  )
}

/** the route prefix as a client may spell it */
const prefixes = fc.constantFrom(
  '/api/v1', '/api/v1', '/api/v1', '/api/v1/users', '/api/v1/orgs/acme', '/api/v1/orgs/globex', '/api/v1/open',
  '/ap%69/v1', '/%61pi/v1', '/api/%76%31', '/API/v1', '/api/V1', '/api', '/apix/v1', '', '/other', '//api/v1',
  '/api//v1'
)

function query (keys: readonly string[]): fc.Arbitrary<string> {
  const part = fc.oneof(
    fc.constantFrom('a=1', 'a=1&a=2', 'next=/../admin//x', 'e=%2e%2e', 'b=%2F', 'q=%61', 'c=hello+world', 'd', '', '='),
    fc.constantFrom('x=<', 'x="', 'x={}', 'x=\xe9', 'x= y', 'x=#y', 'x=\x7f', 'x=\x00'),
    keyPieces(keys).map((k) => `key=${k}`)
  )
  return fc.array(part, { maxLength: 3 }).map((parts) => '?' + parts.join('&'))
}

/** A built target: a prefix, segments, maybe a trailing `/`, maybe a query. */
function builtTarget (keys: readonly string[]): fc.Arbitrary<string> {
  const segments = fc.array(segment(keys), { maxLength: 4 })
  return fc.tuple(prefixes, segments, fc.boolean(), fc.option(query(keys), { freq: 3 }))
    .map(([prefix, segs, trailing, q]) => {
      const path = segs.length === 0 ? prefix : `${prefix}/${segs.join('/')}`
      return (path === '' ? '' : path) + (trailing && path !== '' ? '/' : '') + (q ?? '')
    })
}

/** The fixed cases of path-cases.ts, whole, and a few other forms of target. */
const fixedTarget = fc.oneof(
  fc.constantFrom(...REFUSED_TARGETS.map(([, , target]) => Buffer.from(target).toString('latin1'))),
  fc.constantFrom(...ACCEPTED_TARGETS.map(([, target]) => target)),
  fc.constantFrom(...DECODED_RULE_TARGETS.map(([, target]) => target)),
  fc.constantFrom(
    '*', 'localhost:80', 'http://evil.example/api/v1/users', 'api/v1/users', '/', '/api/v1', '/api/v1/', '/api/v1/x..',
    '/api/v1/..'
  )
)

/** Targets from every spelling the path policy knows (see the header). */
export function targets (keys: readonly string[] = []): fc.Arbitrary<string> {
  return fc.oneof({ weight: 5, arbitrary: builtTarget(keys) }, { weight: 1, arbitrary: fixedTarget })
}

/** Methods a client may send; the gateway's rules cover GET, POST and any ("*"). */
export const methods = fc.constantFrom('GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS')
