/**
 * The original request a CheckRequest asks about, as the decision takes it:
 *
 *   method    `attributes.request.http.method`, one node's HTTP parser admits, else 400
 *   target    `attributes.request.http.path`: the request target as it came, path and
 *             query, not decoded (the target policy judges it with the rest of the decision)
 *   headers   `attributes.request.http.headers` (or `header_map`, with Envoy's
 *             `encode_raw_headers`), as a raw header list; pseudo-headers (`:authority`...)
 *             left out. More than `limits.header_count`, or more than `limits.header_bytes`
 *             of names and values: 431, as on the HTTP listeners
 *   host      `attributes.request.http.host` (routes with `hosts`)
 *   client    `attributes.source.address`, when it is an IP address
 *
 * No field is trusted for its own sake: the caller asks only for a trusted peer's.
 */
import { isIP } from 'node:net'
import type { ErrorCode, Reason } from '../errors.js'
import { PROXIED_METHODS } from '../http/methods.js'
import type { CheckRequest, HttpRequest } from './envoy-protos.js'

export type OriginalCheck =
  | { ok: true, method: string, target: string, rawHeaders: string[], host: string | undefined }
  | { ok: false, code: ErrorCode, reason: Reason, target: string, rawHeaders: string[] }

export interface HeaderLimits {
  header_count: number
  header_bytes: number
}

const METHODS: ReadonlySet<string> = new Set(PROXIED_METHODS)
const NONE: string[] = []

export function originalCheck (request: CheckRequest, limits: HeaderLimits): OriginalCheck {
  const http: HttpRequest = request.attributes?.request?.http ?? {}
  const target = typeof http.path === 'string' ? http.path : ''
  const rawHeaders = headerList(http, limits)
  if (rawHeaders === undefined) {
    return { ok: false, code: 'header_too_large', reason: 'header_too_large', target, rawHeaders: NONE }
  }
  const method = http.method ?? ''
  if (!METHODS.has(method) || target === '') {
    return { ok: false, code: 'bad_request', reason: 'bad_request', target, rawHeaders }
  }
  const host = http.host === undefined || http.host === '' ? undefined : http.host
  return { ok: true, method, target, rawHeaders, host }
}

/** The client Envoy reports: `attributes.source.address`, when it is an IP address. */
export function sourceAddress (request: CheckRequest): string | undefined {
  const address = request.attributes?.source?.address?.socket_address?.address
  return address !== undefined && address.length <= 45 && isIP(address) !== 0 ? address : undefined
}

/** name, value, name, value...: as node's `rawHeaders`; undefined over the limits */
function headerList (http: HttpRequest, limits: HeaderLimits): string[] | undefined {
  const out: string[] = []
  let bytes = 0
  const add = (name: string, value: string): boolean => {
    if (name === '' || name.charCodeAt(0) === 0x3A) return true
    bytes += name.length + value.length
    out.push(name, value)
    return out.length <= limits.header_count * 2 && bytes <= limits.header_bytes
  }
  const map = http.headers
  if (map !== undefined) {
    for (const name in map) if (!add(name, map[name] as string)) return undefined
  }
  for (const h of http.header_map?.headers ?? NONE_HEADERS) {
    const value = h.raw_value !== undefined && h.raw_value.length > 0 ? h.raw_value.toString('latin1') : h.value ?? ''
    if (!add(h.key ?? '', value)) return undefined
  }
  return out
}

const NONE_HEADERS: NonNullable<NonNullable<HttpRequest['header_map']>['headers']> = []
