/**
 * Which request a decision request asks about, by the proxy in front (`authz.proxy`):
 *
 *   traefik   Traefik ForwardAuth   X-Forwarded-Method + X-Forwarded-Uri
 *   nginx     nginx auth_request    X-Original-Method  + X-Original-URI
 *   envoy     Envoy ext_authz       the decision request's own method and target,
 *                                   with authz.path_prefix removed
 *   auto      whichever of the three the request carries; a request carrying both
 *             pairs (any one header of a pair counts as carrying it) is ambiguous: 400
 *
 * A named proxy's own way is the only one read: nginx and Caddy pass a client's
 * headers on to the authorizer, so a client's own copy of another proxy's pair must
 * never choose the path that is decided. Without a header pair the request's own
 * target is the one named (Envoy's way), so `auto` reads it only when neither pair
 * is there.
 *
 * A pair is all or nothing: one header of a pair without the other, any of the four
 * sent twice, or a method node's HTTP parser would not admit is a 400; nothing is
 * guessed. The target itself goes through the target policy with the rest of the
 * decision (decide-request.ts).
 */
import { PROXIED_METHODS } from '../http/methods.js'

export type Proxy = 'auto' | 'nginx' | 'traefik' | 'envoy'
export type Way = 'traefik' | 'nginx' | 'envoy'

export type OriginalRequest =
  | { ok: true, via: Way, method: string, target: string }
  | { ok: false, problem: 'bad_request' | 'ambiguous' | 'outside_path_prefix' }

const METHODS: ReadonlySet<string> = new Set(PROXIED_METHODS)
const BAD: OriginalRequest = { ok: false, problem: 'bad_request' }
const AMBIGUOUS: OriginalRequest = { ok: false, problem: 'ambiguous' }
const OUTSIDE: OriginalRequest = { ok: false, problem: 'outside_path_prefix' }

// the four names, by length first (most headers are ruled out without lower-casing)
const FORWARDED_METHOD = 'x-forwarded-method'
const FORWARDED_URI = 'x-forwarded-uri'
const ORIGINAL_METHOD = 'x-original-method'
const ORIGINAL_URI = 'x-original-uri'
const NAMES: ReadonlySet<string> = new Set([FORWARDED_METHOD, FORWARDED_URI, ORIGINAL_METHOD, ORIGINAL_URI])
const LENGTHS = new Set([FORWARDED_METHOD.length, FORWARDED_URI.length, ORIGINAL_METHOD.length, ORIGINAL_URI.length])

export function originalRequest (
  rawHeaders: readonly string[], ownMethod: string, ownTarget: string, pathPrefix: string, proxy: Proxy = 'auto'
): OriginalRequest {
  let fMethod: string | undefined
  let fUri: string | undefined
  let oMethod: string | undefined
  let oUri: string | undefined
  if (proxy !== 'envoy') {
    for (let i = 0; i < rawHeaders.length; i += 2) {
      const name = rawHeaders[i] as string
      if (!LENGTHS.has(name.length)) continue
      const value = rawHeaders[i + 1] as string
      // (a name already in lower case, as most proxies send it, is not copied)
      switch (NAMES.has(name) ? name : name.toLowerCase()) {
        case FORWARDED_METHOD: if (fMethod !== undefined) return BAD; fMethod = value; break
        case FORWARDED_URI: if (fUri !== undefined) return BAD; fUri = value; break
        case ORIGINAL_METHOD: if (oMethod !== undefined) return BAD; oMethod = value; break
        case ORIGINAL_URI: if (oUri !== undefined) return BAD; oUri = value; break
      }
    }
  }
  const traefik = fMethod !== undefined || fUri !== undefined
  const nginx = oMethod !== undefined || oUri !== undefined

  switch (proxy) {
    case 'traefik': return pair('traefik', fMethod, fUri)
    case 'nginx': return pair('nginx', oMethod, oUri)
    case 'envoy': return own(ownMethod, ownTarget, pathPrefix)
    case 'auto':
      if (traefik && nginx) return AMBIGUOUS
      if (traefik) return pair('traefik', fMethod, fUri)
      if (nginx) return pair('nginx', oMethod, oUri)
      return own(ownMethod, ownTarget, pathPrefix)
  }
}

/** Whether a decision request names an original request in headers (a proxy's, not Envoy's own target). */
export function namesOriginal (rawHeaders: readonly string[]): boolean {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (!LENGTHS.has(name.length)) continue
    const lower = name.toLowerCase()
    if (
      lower === FORWARDED_METHOD || lower === FORWARDED_URI || lower === ORIGINAL_METHOD || lower === ORIGINAL_URI
    ) return true
  }
  return false
}

function pair (via: 'traefik' | 'nginx', method: string | undefined, target: string | undefined): OriginalRequest {
  if (method === undefined || target === undefined || !METHODS.has(method)) return BAD
  return { ok: true, via, method, target }
}

/** Envoy: the request's own, under the prefix */
function own (method: string, target: string, pathPrefix: string): OriginalRequest {
  if (pathPrefix === '') return { ok: true, via: 'envoy', method, target }
  if (!target.startsWith(pathPrefix)) return OUTSIDE
  const rest = target.slice(pathPrefix.length)
  if (rest.charCodeAt(0) !== 0x2F) return OUTSIDE
  return { ok: true, via: 'envoy', method, target: rest }
}
