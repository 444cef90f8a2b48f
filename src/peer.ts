/**
 * What a client address is counted as, wherever keygate keeps a budget per client
 * (the unknown-key lookups: src/cache/unknown-key-limit.ts; failed admin sign-ins:
 * src/admin/api/sign-in-limit.ts), so one client is one bucket everywhere:
 *
 *   IPv4                          as is
 *   IPv4-mapped IPv6 (::ffff:a.b.c.d)   its IPv4 address
 *   IPv6                          its /64, spelled one way (lower case, no leading
 *                                 zeros, `::` expanded): one host usually holds a whole
 *                                 /64, so per address it would hold 2^64 budgets
 *   IPv6 with an IPv4 tail        the whole address: behind NAT64 or SIIT (64:ff9b::/96)
 *   (NAT64, SIIT)                 each IPv4 client has its own, and a /64 would put
 *                                 them all in one bucket
 *   none                          `(unknown)`
 *
 * A zone id (`fe80::1%eth0`) is ignored.
 */
import { isIP } from 'node:net'

export function peerOf (address: string | undefined): string {
  if (address === undefined || address === '') return '(unknown)'
  if (!address.includes(':')) return address
  const bare = (address.split('%', 1)[0] as string).toLowerCase()
  if (bare.startsWith('::ffff:') && isIP(bare.slice(7)) === 4) return bare.slice(7)
  if (bare.includes('.')) return bare
  const [head = '', tail] = bare.split('::', 2)
  const front = head === '' ? [] : head.split(':')
  const back = tail === undefined || tail === '' ? [] : tail.split(':')
  const groups = tail === undefined
    ? front
    : [...front, ...Array<string>(Math.max(0, 8 - front.length - back.length)).fill('0'), ...back]
  return groups.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16)).join(':') + '::/64'
}
