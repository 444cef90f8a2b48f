/**
 * Which request a decision request asks about, in this order:
 *
 *   Traefik ForwardAuth   X-Forwarded-Method + X-Forwarded-Uri
 *   nginx auth_request    X-Original-Method  + X-Original-URI
 *   Envoy ext_authz       the decision request's own method and target, with
 *                         authz.path_prefix removed
 *
 * A pair is all or nothing: one header of a pair without the other, any of the four
 * sent twice, or a method node's HTTP parser would not admit is a 400; nothing is
 * guessed. The target itself goes through the target policy with the rest of the
 * decision (decide-request.ts).
 *
 * The address the request came from, for the per-peer budget of unknown keys, is the
 * last `X-Forwarded-For` entry (what the proxy in front appended), else the proxy's own.
 */
import { PROXIED_METHODS } from '../http/methods.js'

export type OriginalRequest =
  | { ok: true, via: 'traefik' | 'nginx' | 'envoy', method: string, target: string }
  | { ok: false, problem: 'bad_request' | 'outside_path_prefix' }

const METHODS: ReadonlySet<string> = new Set(PROXIED_METHODS)
const BAD: OriginalRequest = { ok: false, problem: 'bad_request' }
const OUTSIDE: OriginalRequest = { ok: false, problem: 'outside_path_prefix' }

// the four names, by length first (most headers are ruled out without lower-casing)
const FORWARDED_METHOD = 'x-forwarded-method'
const FORWARDED_URI = 'x-forwarded-uri'
const ORIGINAL_METHOD = 'x-original-method'
const ORIGINAL_URI = 'x-original-uri'
const LENGTHS = new Set([FORWARDED_METHOD.length, FORWARDED_URI.length, ORIGINAL_METHOD.length, ORIGINAL_URI.length])

export function originalRequest (rawHeaders: readonly string[], ownMethod: string, ownTarget: string, pathPrefix: string): OriginalRequest {
  let fMethod: string | undefined
  let fUri: string | undefined
  let oMethod: string | undefined
  let oUri: string | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (!LENGTHS.has(name.length)) continue
    const value = rawHeaders[i + 1] as string
    switch (name.toLowerCase()) {
      case FORWARDED_METHOD: if (fMethod !== undefined) return BAD; fMethod = value; break
      case FORWARDED_URI: if (fUri !== undefined) return BAD; fUri = value; break
      case ORIGINAL_METHOD: if (oMethod !== undefined) return BAD; oMethod = value; break
      case ORIGINAL_URI: if (oUri !== undefined) return BAD; oUri = value; break
    }
  }

  if (fMethod !== undefined || fUri !== undefined) return pair('traefik', fMethod, fUri)
  if (oMethod !== undefined || oUri !== undefined) return pair('nginx', oMethod, oUri)

  // Envoy: the request's own, under the prefix
  if (pathPrefix === '') return { ok: true, via: 'envoy', method: ownMethod, target: ownTarget }
  if (!ownTarget.startsWith(pathPrefix)) return OUTSIDE
  const rest = ownTarget.slice(pathPrefix.length)
  if (rest.charCodeAt(0) !== 0x2F) return OUTSIDE
  return { ok: true, via: 'envoy', method: ownMethod, target: rest }
}

/** Whether a decision request names an original request in headers (a proxy's, not Envoy's own target). */
export function namesOriginal (rawHeaders: readonly string[]): boolean {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (!LENGTHS.has(name.length)) continue
    const lower = name.toLowerCase()
    if (lower === FORWARDED_METHOD || lower === FORWARDED_URI || lower === ORIGINAL_METHOD || lower === ORIGINAL_URI) return true
  }
  return false
}

function pair (via: 'traefik' | 'nginx', method: string | undefined, target: string | undefined): OriginalRequest {
  if (method === undefined || target === undefined || !METHODS.has(method)) return BAD
  return { ok: true, via, method, target }
}

/** The client's address as the proxy in front saw it: the last X-Forwarded-For entry, else the proxy's own address. */
export function clientAddress (rawHeaders: readonly string[], peer: string | undefined): string | undefined {
  let last: string | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length === 15 && name.toLowerCase() === 'x-forwarded-for') last = rawHeaders[i + 1]
  }
  if (last === undefined) return peer
  const comma = last.lastIndexOf(',')
  const entry = (comma === -1 ? last : last.slice(comma + 1)).trim()
  return entry === '' ? peer : entry
}
