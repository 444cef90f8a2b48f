/**
 * Stage 8a: the headers sent upstream. Strip, then set: every client header that
 * could impersonate an identity or steer the upstream is dropped in every spelling
 * (case-insensitive, `_` read as `-`), then the identity headers are set from the
 * resolved identity. The sets of names are built once, at start-up.
 *
 * `Connection` and the names it lists were already removed by @fastify/reply-from
 * before this runs, so a client cannot use them to drop what is set here.
 */
import type { FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import { BlockList, isIP } from 'node:net'
import type { Identity } from './decide.js'

export interface HeaderPolicy {
  /** identity header prefix, e.g. `X-Auth-` */
  prefix: string
  forwardAuthorization: boolean
  trustedProxies: readonly string[]
}

/** Hop-by-hop headers (RFC 9110 section 7.6.1): they describe one connection, so neither direction forwards them. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'])

const ALWAYS_STRIPPED = [
  ...HOP_BY_HOP,
  'proxy-authorization',
  'x-http-method-override', 'x-http-method', 'x-method-override',
  'x-request-id',
  // node has already answered `100-continue` to the client; undici refuses to send it on
  'expect'
]
const FORWARDING = ['forwarded', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port', 'x-forwarded-prefix', 'x-real-ip']

export type RequestHeaderRewriter = (request: FastifyRequest, headers: IncomingHttpHeaders) => IncomingHttpHeaders

export function createHeaderRewriter (policy: HeaderPolicy): RequestHeaderRewriter {
  const prefix = policy.prefix.toLowerCase()
  const stripped = new Set(ALWAYS_STRIPPED)
  if (!policy.forwardAuthorization) stripped.add('authorization')
  const forwarding = new Set(FORWARDING)
  const isTrusted = trustedPeers(policy.trustedProxies)

  return function rewriteRequestHeaders (request, headers) {
    const peer = normaliseAddress(request.raw.socket.remoteAddress ?? '')
    const trusted = isTrusted(peer)
    const out: IncomingHttpHeaders = {}
    for (const name in headers) {
      if (stripped.has(name)) continue
      if (!trusted && forwarding.has(name)) continue
      const canonical = name.includes('_') ? name.replace(/_/g, '-') : name
      if (canonical.startsWith(prefix)) continue
      if (canonical !== name && (stripped.has(canonical) || forwarding.has(canonical))) continue
      out[name] = headers[name]
    }

    const id = request.kg.identity
    if (id !== undefined) setIdentity(out, prefix, id)
    out['x-request-id'] = request.id

    const priorFor = trusted ? headers['x-forwarded-for'] : undefined
    out['x-forwarded-for'] = priorFor === undefined ? peer : `${String(priorFor)}, ${peer}`
    if (!trusted || out['x-forwarded-proto'] === undefined) out['x-forwarded-proto'] = request.protocol
    if (!trusted || out['x-forwarded-host'] === undefined) out['x-forwarded-host'] = request.headers.host ?? ''
    return out
  }
}

/** `::ffff:10.0.0.1` -> `10.0.0.1`, so IPv4 CIDRs match IPv4 peers on dual-stack sockets. */
function normaliseAddress (address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address
}

/** trusted_proxies: addresses or CIDRs, IPv4 or IPv6. Entries were validated with the config. */
function trustedPeers (cidrs: readonly string[]): (address: string) => boolean {
  if (cidrs.length === 0) return () => false
  const list = new BlockList()
  for (const entry of cidrs) {
    const [address, bits] = entry.split('/') as [string, string | undefined]
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    if (bits === undefined) list.addAddress(address, family)
    else list.addSubnet(address, Number(bits), family)
  }
  return (address) => {
    const family = isIP(address)
    return family !== 0 && list.check(address, family === 6 ? 'ipv6' : 'ipv4')
  }
}

/** For the config validator: a problem with one trusted_proxies entry, or undefined. */
export function trustedProxyProblem (entry: string): string | undefined {
  const [address, bits, extra] = entry.split('/')
  const family = isIP(address ?? '')
  if (family === 0 || extra !== undefined) return `"${entry}" is not an IP address or CIDR`
  if (bits !== undefined) {
    const n = Number(bits)
    if (!/^[0-9]{1,3}$/.test(bits) || n > (family === 6 ? 128 : 32)) return `"${entry}" has an invalid prefix length`
  }
  return undefined
}

/** The identity headers (prefix lower-cased), set on a header object. */
function setIdentity (out: Record<string, string | string[] | undefined>, prefix: string, id: Identity): void {
  out[prefix + 'key-id'] = id.keyId
  out[prefix + 'key-type'] = id.type
  if (id.userId !== undefined) out[prefix + 'user-id'] = id.userId
  out[prefix + 'org-id'] = id.org
  out[prefix + 'role'] = id.role
}

/** The identity headers for an identity, as the upstream receives them (for `keygate check`). */
export function identityHeaders (prefix: string, id: Identity, requestId: string): Record<string, string> {
  const out: Record<string, string> = {}
  setIdentity(out, prefix.toLowerCase(), id)
  out['x-request-id'] = requestId
  return out
}
