/**
 * Where a webhook may be sent (SSRF): an endpoint's URL is `http:` or `https:`, without
 * credentials, and every address its host resolves to must be a public one: never
 * loopback, link-local (the cloud metadata address 169.254.169.254 among them),
 * private, CGNAT, unspecified, multicast or reserved, in IPv4 or IPv6 (an IPv4-mapped
 * IPv6 address is judged as the IPv4 address it carries), unless
 * `webhooks.allow_private_targets` is set.
 *
 * It is checked when an endpoint is registered (`targetProblem`) and again at every
 * delivery, on the very address the connection is made to (`pinnedLookup`, the
 * connection's own DNS lookup), so a name that resolves to a public address at
 * registration and to a private one later (DNS rebinding) is refused.
 */
import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { BlockList, isIP, type LookupFunction } from 'node:net'

const V4_BLOCKED: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4] // reserved, broadcast
]
const V6_BLOCKED: Array<[string, number]> = [
  ['::', 96], // unspecified, loopback, IPv4-compatible (deprecated)
  ['64:ff9b::', 96], // NAT64 (an IPv4 address inside)
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (private)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, private)
  ['ff00::', 8] // multicast
]

const blocked = new BlockList()
for (const [net, bits] of V4_BLOCKED) blocked.addSubnet(net, bits, 'ipv4')
for (const [net, bits] of V6_BLOCKED) blocked.addSubnet(net, bits, 'ipv6')

/** The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, `::ffff:7f00:1`) carries. */
function embeddedV4 (address: string): string | undefined {
  const dotted = /^(?:::ffff:|(?:0{1,4}:){5}ffff:)((?:[0-9]{1,3}\.){3}[0-9]{1,3})$/i.exec(address)
  if (dotted !== null) return dotted[1]
  const hex = /^(?:::ffff:|(?:0{1,4}:){5}ffff:)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address)
  if (hex === null) return undefined
  const hi = parseInt(hex[1] as string, 16)
  const lo = parseInt(hex[2] as string, 16)
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.')
}

/** Whether an IP address is one a webhook is never sent to (without allow_private_targets). */
export function isPrivateAddress (address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '')
  const family = isIP(bare)
  if (family === 4) return blocked.check(bare, 'ipv4')
  if (family !== 6) return true
  const v4 = embeddedV4(bare.toLowerCase())
  if (v4 !== undefined && isIP(v4) === 4) return blocked.check(v4, 'ipv4')
  return blocked.check(bare, 'ipv6')
}

/** What is wrong with an endpoint URL's form, or undefined. */
export function urlProblem (raw: string): string | undefined {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'the URL does not parse'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'the URL is not http:// or https://'
  if (url.username !== '' || url.password !== '') return 'the URL carries credentials'
  if (url.hash !== '') return 'the URL has a fragment'
  if (raw.length > 2048) return 'the URL is longer than 2048 characters'
  return undefined
}

export type Resolve = (host: string) => Promise<LookupAddress[]>

const resolveAll: Resolve = async (host) => await new Promise((resolve, reject) => {
  dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => {
    if (err !== null) reject(err)
    else resolve(addresses)
  })
})

/**
 * Why an endpoint URL is refused, or undefined: its form, a host that does not resolve,
 * or one address it resolves to that is not public (unless `allowPrivate`).
 */
export async function targetProblem (
  raw: string, allowPrivate: boolean, resolve = resolveAll
): Promise<string | undefined> {
  const form = urlProblem(raw)
  if (form !== undefined) return form
  const host = new URL(raw).hostname.replace(/^\[|\]$/g, '')
  if (allowPrivate) return undefined
  if (isIP(host) !== 0) return isPrivateAddress(host) ? `${host} is not a public address` : undefined
  let addresses: LookupAddress[]
  try {
    addresses = await resolve(host)
  } catch {
    return `${host} does not resolve`
  }
  if (addresses.length === 0) return `${host} does not resolve`
  const bad = addresses.find((a) => isPrivateAddress(a.address))
  return bad === undefined ? undefined : `${host} resolves to ${bad.address}, not a public address`
}

/**
 * The connection's own DNS lookup (undici's `connect.lookup`): the addresses the socket
 * connects to are the ones checked, so a DNS answer cannot change between the check
 * and the connection.
 */
export function pinnedLookup (allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true, verbatim: true }, (err, addresses) => {
      if (err !== null) { callback(err, '', 0); return }
      const bad = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address))
      const first = addresses[0]
      if (bad !== undefined || first === undefined) {
        const refused = Object.assign(new Error(`${hostname} resolves to a non-public address`), { code: 'EPRIVATE' })
        callback(refused, '', 0)
        return
      }
      if (options.all === true) callback(null, addresses as never, 0)
      else callback(null, first.address, first.family)
    })
  }
}
