/**
 * The address a decision is charged to, for the per-address budget of unknown keys
 * (`limits.unknown_keys_per_peer`): the last `X-Forwarded-For` entry, the one the
 * proxy in front wrote (nginx `$remote_addr`, Traefik and Caddy by default, Envoy with
 * `use_remote_address`; docs/authorizer.md), when it is an IP address; else the
 * proxy's own address. Anything else a client could have put there (a name, junk, a
 * 16 KiB string) is never a budget of its own, so it neither multiplies budgets nor
 * grows the table of them beyond short address keys.
 */
import { isIP } from 'node:net'

const XFF = 'x-forwarded-for'

export function clientAddress (rawHeaders: readonly string[], peer: string | undefined): string | undefined {
  let last: string | undefined
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length === XFF.length && (name === XFF || name.toLowerCase() === XFF)) last = rawHeaders[i + 1]
  }
  if (last === undefined) return peer
  const comma = last.lastIndexOf(',')
  const entry = (comma === -1 ? last : last.slice(comma + 1)).trim()
  return entry.length <= 45 && isIP(entry) !== 0 ? entry : peer
}
