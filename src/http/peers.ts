/**
 * A connection's peer and the client behind it: whether the peer is in a list of
 * addresses (trusted_proxies, authz.trusted_peers), and the client a trusted peer
 * reports. The data plane, the admin listener, the authorizers and the WebSocket
 * upgrade read a request's client address through these.
 */
import { BlockList, isIP, type Socket } from 'node:net'
import { clientAddress } from '../client-address.js'

export interface ConnectionPeer {
  /** the peer's address, IPv4-mapped IPv6 as IPv4 */
  peer: string
  /** whether it is in the list */
  trusted: boolean
}

/**
 * A connection's peer and whether it is in `cidrs` (trusted_proxies, authz.trusted_peers).
 * A connection's peer never changes, so it is worked out once per connection (a
 * `BlockList` lookup is ~1 us), remembered on the socket under a symbol of this list's.
 */
export function connectionPeer (cidrs: readonly string[]): (socket: Socket) => ConnectionPeer {
  const peerAt = addressPeer(cidrs)
  const kPeer = Symbol('keygate.peer')
  type PeerSocket = Socket & { [kPeer]?: ConnectionPeer }
  return (socket: PeerSocket) => {
    let known = socket[kPeer]
    if (known === undefined) {
      known = peerAt(socket.remoteAddress ?? '')
      socket[kPeer] = known
    }
    return known
  }
}

/** A peer's address (a socket's `remoteAddress`) and whether it is in `cidrs`: for a transport without the socket. */
export function addressPeer (cidrs: readonly string[]): (address: string) => ConnectionPeer {
  const isTrusted = trustedPeers(cidrs)
  return (address) => {
    const peer = normaliseAddress(address)
    return { peer, trusted: isTrusted(peer) }
  }
}

/**
 * The client's address, for the log line: the connection's peer, or, when the peer is
 * a trusted proxy (`cidrs`), the client it reports (the authorizer's rule: the last
 * `X-Forwarded-For` entry, which that proxy wrote, when it is an IP address).
 */
export function clientAddressOf (cidrs: readonly string[]): (socket: Socket, rawHeaders: readonly string[]) => string {
  const peerOf = connectionPeer(cidrs)
  return (socket, rawHeaders) => reportedClient(peerOf(socket), rawHeaders)
}

/** The client behind a connection's peer: the peer itself, or the client a trusted peer reports. */
export function reportedClient ({ peer, trusted }: ConnectionPeer, rawHeaders: readonly string[]): string {
  return trusted ? clientAddress(rawHeaders, peer) ?? peer : peer
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
