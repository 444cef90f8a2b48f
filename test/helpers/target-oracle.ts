/**
 * The path policy of docs/security.md ("Requests"), written
 * out again from the text, apart from src/decision/target-policy.ts, so that the fuzz
 * tests compare the gateway with the documents rather than with itself.
 *
 * A target is a byte string (each character one byte, as written on the socket). It is
 * refused (400, never forwarded) when it is not origin-form; when its path holds a byte
 * that is not an RFC 3986 pchar or `/` (so `\`, `;`, controls, spaces, `#`, any byte
 * past ASCII); an escape that is not `%` and two hex digits, or that encodes a control,
 * `/` or `\`; escapes that are not UTF-8; an empty segment (one trailing `/` aside); a
 * segment that is `.` or `..` or starts or ends with `..`, once its unreserved escapes
 * are decoded, or that becomes a dot segment or holds a separator or a control when
 * decoded again (up to four times); or a query with a byte outside visible ASCII or a
 * `#`. Otherwise the upstream receives the path with its unreserved escapes decoded,
 * every other escape as sent, and the query exactly as sent (an empty one, a lone `?`,
 * is no query: it is not sent).
 */
export type TargetVerdict =
  | { refused: true, why: string }
  | { refused: false, path: string, query: string }

const UNRESERVED = /[A-Za-z0-9\-._~]/
const PCHAR = /[A-Za-z0-9\-._~!$&'()*+,=:@]/
const HEX2 = /^[0-9A-Fa-f]{2}$/

function refuse (why: string): TargetVerdict {
  return { refused: true, why }
}

function isControl (code: number): boolean {
  return code < 0x20 || code === 0x7f
}

export function contractTarget (target: string): TargetVerdict {
  if (!target.startsWith('/')) return refuse('not origin-form')
  const q = target.indexOf('?')
  const rawPath = q === -1 ? target : target.slice(0, q)
  const query = q === -1 || q === target.length - 1 ? '' : target.slice(q)
  for (const ch of query.slice(1)) {
    const code = ch.charCodeAt(0)
    if (code < 0x21 || code > 0x7e || ch === '#') return refuse('a query byte outside visible ASCII, or a fragment')
  }
  if (rawPath === '/') return { refused: false, path: '/', query }
  const segments = rawPath.slice(1).split('/')
  const decoded: string[] = []
  for (let i = 0; i < segments.length; i++) {
    const raw = segments[i] as string
    if (raw === '') {
      if (i === segments.length - 1 && i > 0) { decoded.push(''); continue }
      return refuse('an empty segment')
    }
    const once = decodeUnreserved(raw)
    if (typeof once !== 'string') return once
    if (once.startsWith('..') || once.endsWith('..') || once === '.') {
      return refuse('a dot segment, or a segment starting or ending with ..')
    }
    const again = decodedAgain(once)
    if (again !== undefined) return again
    decoded.push(once)
  }
  const path = '/' + decoded.join('/')
  try {
    decodeURIComponent(path)
  } catch {
    return refuse('escapes that are not UTF-8')
  }
  return { refused: false, path, query }
}

/** One segment with its unreserved escapes decoded, or its refusal. */
function decodeUnreserved (raw: string): string | TargetVerdict {
  let out = ''
  for (let i = 0; i < raw.length; i++) {
    const ch = raw[i] as string
    if (ch !== '%') {
      if (!PCHAR.test(ch)) return refuse(`a byte that is no pchar: 0x${ch.charCodeAt(0).toString(16)}`)
      out += ch
      continue
    }
    const hex = raw.slice(i + 1, i + 3)
    if (!HEX2.test(hex)) return refuse('an invalid escape')
    const byte = parseInt(hex, 16)
    const decoded = String.fromCharCode(byte)
    if (isControl(byte) || decoded === '/' || decoded === '\\') return refuse('an encoded control or separator')
    out += UNRESERVED.test(decoded) ? decoded : '%' + hex
    i += 2
  }
  return out
}

/** A refusal when decoding every escape again (up to four rounds) shows a dot segment, a separator or a control. */
function decodedAgain (segment: string): TargetVerdict | undefined {
  let s = segment
  for (let round = 0; round < 4 && s.includes('%'); round++) {
    const next = s.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    if (next === s) break
    s = next
    if (s === '.' || s === '..') return refuse('a dot segment once decoded again')
    for (const ch of s) {
      if (isControl(ch.charCodeAt(0)) || ch === '/' || ch === '\\') {
        return refuse('a separator or control once decoded again')
      }
    }
  }
  return undefined
}
