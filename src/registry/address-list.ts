/**
 * A key's `allowed_cidrs` (docs/key-scopes.md): IPv4 and IPv6 CIDRs, parsed and matched
 * in one place for the request path (a client address allowed or not) and the admin
 * wing (an address list within another: a principal mints no key wider than its own).
 */
import { BlockList, isIP } from 'node:net'
import { INVALID, type Invalid } from './invalid.js'

/**
 * `allowed_cidrs`: IPv4 and IPv6 CIDRs (a bare address is one host), matched with
 * node:net's BlockList. A client address in IPv4-mapped IPv6 form (`::ffff:10.0.0.1`)
 * is matched as its IPv4 address; a zone id is ignored; no address is never allowed.
 */
export class AddressList {
  private constructor (
    readonly cidrs: readonly string[],
    private readonly list: BlockList,
    private readonly parts: readonly CidrParts[]
  ) {}

  /** The list, or INVALID when an entry is not a CIDR (cidrProblems names why). */
  static parse (cidrs: readonly string[]): AddressList | Invalid {
    if (cidrs.length === 0 || cidrProblems(cidrs).length > 0) return INVALID
    const list = new BlockList()
    const parts = cidrs.map((c) => cidrParts(c) as CidrParts)
    for (const { address, prefix, family } of parts) list.addSubnet(address, prefix, family)
    return new AddressList(Object.freeze([...cidrs]), list, parts)
  }

  /**
   * Whether every address of `cidr` is in the list: it lies wholly within one entry of
   * its own family (an entry at least as wide that holds its first address). A CIDR
   * that is not one is covered by nothing.
   */
  covers (cidr: string): boolean {
    const c = cidrParts(cidr)
    if (c === undefined) return false
    return this.parts.some((e) => {
      if (e.family !== c.family || e.prefix > c.prefix) return false
      const one = new BlockList()
      one.addSubnet(e.address, e.prefix, e.family)
      return one.check(c.address, c.family)
    })
  }

  allows (address: string | undefined): boolean {
    if (address === undefined) return false
    let a = address.includes('%') ? address.slice(0, address.indexOf('%')) : address
    if (a.startsWith('::ffff:') && isIP(a.slice(7)) === 4) a = a.slice(7)
    const family = isIP(a)
    if (family === 0) return false
    return this.list.check(a, family === 4 ? 'ipv4' : 'ipv6')
  }
}

interface CidrParts { address: string, prefix: number, family: 'ipv4' | 'ipv6' }

function cidrParts (cidr: string): CidrParts | undefined {
  const slash = cidr.indexOf('/')
  const address = slash === -1 ? cidr : cidr.slice(0, slash)
  const family = isIP(address)
  if (family === 0 || address.includes('%')) return undefined
  const max = family === 4 ? 32 : 128
  const bits = slash === -1 ? String(max) : cidr.slice(slash + 1)
  if (!/^\d{1,3}$/.test(bits) || Number(bits) > max) return undefined
  return { address, prefix: Number(bits), family: family === 4 ? 'ipv4' : 'ipv6' }
}

/** Why each entry of an address list is not an IPv4 or IPv6 CIDR (empty: all are fine). */
export function cidrProblems (cidrs: readonly string[]): string[] {
  return cidrs.filter((c) => cidrParts(c) === undefined).map((c) =>
    `invalid address "${c.slice(0, 64)}" (expected an IPv4 or IPv6 CIDR such as 10.0.0.0/8 or 2001:db8::/32)`)
}
