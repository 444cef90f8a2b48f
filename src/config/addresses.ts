/**
 * Addresses in the configuration: listeners' `host:port` (listen, admin_listen,
 * authz_listen) and the trusted peers' addresses or CIDRs (trusted_proxies,
 * authz.trusted_peers), checked beyond what the schema's patterns say.
 */
import { isIP } from 'node:net'

/** A `host:port` the schema's pattern accepted: the port in range, an IP address well formed. */
export function addressProblem (hostPort: string): string | undefined {
  const { host, port } = splitHostPort(hostPort)
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    return `port ${String(port)} is out of range (0 to 65535), in ${JSON.stringify(hostPort)}`
  }
  const bracketed = hostPort.startsWith('[')
  if (bracketed && isIP(host) !== 6) {
    return `${JSON.stringify(host)} is not an IPv6 address, in ${JSON.stringify(hostPort)}`
  }
  if (!bracketed && /^[0-9.]+$/.test(host) && isIP(host) !== 4) {
    return `${JSON.stringify(host)} is not an IPv4 address, in ${JSON.stringify(hostPort)}`
  }
  return undefined
}

/** `host:port` or `[v6]:port` -> its parts (the schema has checked the shape). */
export function splitHostPort (hostPort: string): { host: string, port: number } {
  const i = hostPort.lastIndexOf(':')
  return { host: hostPort.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(hostPort.slice(i + 1)) }
}

/** A problem with one trusted_proxies (or authz.trusted_peers) entry, or undefined. */
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
