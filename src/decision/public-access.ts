/**
 * Public rules (docs/routing.md, "Public paths"): a request matching a `public: true`
 * rule and carrying no credential passes without a key, as an anonymous request. No
 * credential is read (the headers' names are looked at, never a value), no record is
 * resolved, Redis is never called; `rate_limits.anonymous` counts it per client
 * address, in this process (src/ratelimit/anonymous.ts). A request that carries
 * `Authorization` or the route's key header, whatever its value, is decided normally,
 * so a refused key is never hidden behind a public rule.
 */
import type { AnonymousLimit } from '../ratelimit/anonymous.js'
import type { RuleMatcher } from './match-rule.js'
import type { Anonymous, Refused } from './verdict.js'

/**
 * A public rule's answer: anonymous, or refused over `rate_limits.anonymous` (429); or
 * undefined: not a public rule, or a credential was sent (decided normally).
 */
export type PublicAccess = (method: string, path: string, rawHeaders: readonly string[], keyHeader: string | undefined,
  client: string | undefined, now: number) => Anonymous | Refused | undefined

/** undefined when no rule is public: then the decision pays nothing for them. */
export function createPublicAccess (
  matchRule: RuleMatcher,
  anyPublic: boolean,
  limit: AnonymousLimit | undefined
): PublicAccess | undefined {
  if (!anyPublic) return undefined
  return function publicAccess (method, path, rawHeaders, keyHeader, client, now) {
    if (carriesCredential(rawHeaders, keyHeader)) return undefined
    const match = matchRule(method, path)
    if (match === null || !match.rule.public) return undefined
    if (limit === undefined) return { ok: true, anonymous: true, identity: undefined, rule: match.rule }
    const v = limit(client, now)
    if (!v.allowed) {
      return {
        ok: false,
        code: 'rate_limited',
        reason: 'rate_limited',
        challenge: undefined,
        keyId: undefined,
        rule: match.rule,
        rateLimit: v
      }
    }
    return { ok: true, anonymous: true, identity: undefined, rule: match.rule, rateLimit: v }
  }
}

/**
 * Whether a request carries a credential: an `Authorization` header or the key header (any spelling of its name's
 * case).
 */
export function carriesCredential (rawHeaders: readonly string[], keyHeader: string | undefined): boolean {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = (rawHeaders[i] as string).toLowerCase()
    if (name === 'authorization' || name === keyHeader) return true
  }
  return false
}
