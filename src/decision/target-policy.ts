/**
 * The receive stage's request-target policy (docs/security.md, "Requests"). Pure.
 *
 * The target must be origin-form. The path may hold only RFC 3986 pchars and `/`,
 * minus `;`; percent-escapes must be well-formed UTF-8. Percent-encoded unreserved
 * characters are decoded once, and that decoded form is both what the rules are
 * matched against and what the upstream receives. Refused: dot segments in any
 * spelling (also double-encoded), empty segments, encoded `/` or `\`, raw `\`, `;`,
 * NUL and every control character, raw or encoded.
 *
 * With these guarantees the path names a path on the upstream's origin as it is: the
 * proxy (data-plane/proxy.ts) forwards it without parsing it again, and WHATWG URL
 * parsing would leave it unchanged, byte for byte.
 */
export type TargetCheck =
  | { ok: true, path: string, query: string }
  | { ok: false, detail: string }

// Segments of pchars without `%` and `;`, none empty, none `.` or `..`; or just `/`.
const FAST_PATH = /^(?:(?:\/(?!\.\.?(?:\/|$))[A-Za-z0-9\-._~!$&'()*+,=:@]+)+\/?|\/)$/
// Bytes a query may carry as they are: visible ASCII except `#`.
const QUERY = /^[\x21\x22\x24-\x7E]*$/
const PCHAR = /^[A-Za-z0-9\-._~!$&'()*+,=:@]$/
const UNRESERVED = /^[A-Za-z0-9\-._~]$/
const HEX = /^[0-9A-Fa-f]{2}$/
const ESCAPE = /%([0-9A-Fa-f]{2})/g

export function checkTarget (target: string): TargetCheck {
  if (target.charCodeAt(0) !== 0x2F) return { ok: false, detail: 'not origin-form' }
  const q = target.indexOf('?')
  const path = q === -1 ? target : target.slice(0, q)
  const query = q === -1 ? '' : target.slice(q)
  if (query.length > 1 && !QUERY.test(query.slice(1))) return { ok: false, detail: 'invalid query characters' }
  const checked = FAST_PATH.test(path) ? { ok: true as const, path, query } : slowPath(path, query)
  // Segments that merely start or end with `..` (`..foo`, `foo..`) are not dot segments, but
  // proxies (reply-from, and so @fastify/http-proxy) refuse to forward them; refusing them here keeps that a clean 400
  // before any Redis lookup, rather than a surprise after authentication.
  if (checked.ok && (checked.path.includes('/..') || checked.path.includes('../') || checked.path.endsWith('..'))) {
    return { ok: false, detail: 'segment starting or ending with ..' }
  }
  return checked
}

function slowPath (path: string, query: string): TargetCheck {
  const segments = path.split('/')
  // segments[0] is the empty string before the leading `/`
  for (let i = 1; i < segments.length; i++) {
    const raw = segments[i] as string
    if (raw === '') {
      if (i === segments.length - 1 && i > 1) continue // one trailing slash
      if (segments.length === 2) continue // the path `/`
      return { ok: false, detail: 'empty segment' }
    }
    const decoded = decodeSegment(raw)
    if (decoded === null) return { ok: false, detail: 'invalid character or escape' }
    if (isDotSegment(decoded) || !safeWhenDecodedAgain(decoded)) {
      return { ok: false, detail: 'dot segment or encoded separator' }
    }
    segments[i] = decoded
  }
  const out = segments.join('/')
  if (out.includes('%')) {
    try {
      decodeURIComponent(out)
    } catch {
      return { ok: false, detail: 'escape is not UTF-8' }
    }
  }
  return { ok: true, path: out, query }
}

/** Validates one segment and decodes its unreserved escapes; null when refused. */
function decodeSegment (raw: string): string | null {
  let out = ''
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string
    if (c !== '%') {
      if (!PCHAR.test(c)) return null
      out += c
      continue
    }
    const hex = raw.slice(i + 1, i + 3)
    if (!HEX.test(hex)) return null
    const byte = parseInt(hex, 16)
    const ch = String.fromCharCode(byte)
    if (byte < 0x20 || byte === 0x7F || ch === '/' || ch === '\\') return null
    out += UNRESERVED.test(ch) ? ch : '%' + hex
    i += 2
  }
  return out
}

function hasSeparatorOrControl (s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c === 0x7F || c === 0x2F || c === 0x5C) return true
  }
  return false
}

function isDotSegment (segment: string): boolean {
  return segment === '.' || segment === '..'
}

/**
 * An upstream that decodes once more must not find a separator, a control
 * character or a dot segment either (`%252e%252e`, `%252f`).
 */
function safeWhenDecodedAgain (segment: string): boolean {
  let s = segment
  for (let round = 0; round < 4 && s.includes('%'); round++) {
    const next = s.replace(ESCAPE, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    if (next === s) break
    s = next
    if (isDotSegment(s) || hasSeparatorOrControl(s)) return false
  }
  return true
}
