/**
 * The decision on one request, as one function that every front end calls: the data
 * plane's gate, the authorizer listener (src/authorizer/), the WebSocket upgrade and
 * `keygate check`. Its stages, in the order of STAGES (stages.ts):
 *
 *   receive          the target policy: origin-form, no dot segments, no encoded `/`...: 400
 *                                                                           target-policy.ts
 *   route prefix     a path under no configured prefix: 404                 route-table.ts
 *   credential to    who is calling: credential, key format, records,
 *   authenticate     key state: 401 / 503                                   authenticate-request.ts
 *   address          a key bound to addresses, from another client: 403    decide.ts
 *   authorize        the route rule: default deny, org, permissions: 403    match-rule.ts, decide.ts
 *   rate limits      the rate limits that apply: 429 (503 when Redis is
 *                    down and rate_limits.on_error is deny)                 src/ratelimit/
 *
 * `decideTarget` runs them all on a raw request target. The data plane runs receive
 * and route prefix as fastify's URL rewrite and router (the same checkTarget, the
 * router built from the same patterns and options as the route table), and calls
 * `decide` for the rest. A request refused before the rate limits consumes none.
 *
 * The result is synchronous when every record is cached and no rate limit applies (no
 * promise on the hot path), a promise otherwise. A refusal names its error code, its reason for the log line and
 * its RFC 6750 challenge.
 */
import type { ErrorCode, Reason } from '../errors.js'
import type { AuthenticateRequest, Authentication } from './authenticate-request.js'
import { authorize, fromAllowedAddress } from './decide.js'
import type { Identity } from './identity.js'
import { challenges } from './challenges.js'
import type { CompiledRule, RuleMatcher } from './match-rule.js'
import type { Limiter, Verdict as RateLimitVerdict } from '../ratelimit/limiter.js'
import { checkTarget } from './target-policy.js'
import type { Anonymous, PublicAccess } from './public-access.js'
import type { Route } from './route-table.js'

export type { Anonymous } from './public-access.js'

/** Allowed with a key, allowed anonymously by a public rule (public-access.ts), or refused. */
export type Verdict = Allowed | Anonymous | Refused

export interface Allowed {
  ok: true
  anonymous?: undefined
  identity: Identity
  rule: CompiledRule
  /** the strictest rate limit that applies, for the RateLimit-* headers; none: undefined */
  rateLimit?: RateLimitVerdict
  /** the key's records were read from Redis (a cache miss) rather than the cache */
  fromRedis?: boolean
}

export interface Refused {
  ok: false
  code: ErrorCode
  reason: Reason
  /** the `WWW-Authenticate` value (401 and 403 only) */
  challenge: string | undefined
  /** the key id, once the key's format was good (for the log line) */
  keyId: string | undefined
  /** who was calling, when it was a valid key that the rule refused */
  identity?: Identity
  /** the rule that matched, if one did */
  rule?: CompiledRule
  /** a 429: the limit that refused, for the RateLimit-* headers and Retry-After */
  rateLimit?: RateLimitVerdict
  /** the key's records were read from Redis (a cache miss); undefined: no key was looked up */
  fromRedis?: boolean
}

/** receive and route prefix passed: the path decided on (and forwarded), its query, its route. */
export interface Target {
  path: string
  /** the raw query string, `?` included */
  query: string
  route: Route
}

export type TargetVerdict =
  | (Verdict & { target: Target })
  | (Refused & { target: undefined, path: string | undefined })

export interface RequestDecider {
  /**
   * credential to rate limits, for a path that passed receive and route prefix.
   * `client`: the client's address as the trusted proxies allow (the TCP peer, or the
   * client a trusted proxy reports): the key's allowed addresses and the unknown-key
   * budget are its.
   */
  decide: (method: string, path: string, rawHeaders: readonly string[], peer: string | undefined, now: number, route?: Route) => Verdict | Promise<Verdict>
  /** receive to rate limits, for a raw request target; `host`: its Host header (routes with `hosts`) */
  decideTarget: (method: string, target: string, rawHeaders: readonly string[], peer: string | undefined, now: number, host?: string) => TargetVerdict | Promise<TargetVerdict>
}

export interface DeciderOptions {
  authenticate: AuthenticateRequest
  matchRule: RuleMatcher
  /** the route table (route-table.ts) */
  routeOf: (path: string, host?: string) => Route | undefined
  /** the rate limits (src/ratelimit/); without one, none apply (`keygate check` shows them, never counts) */
  limiter?: Limiter | undefined
  /** public rules, when any rule is public (public-access.ts) */
  publicAccess?: PublicAccess | undefined
}

export function createDecider ({ authenticate, matchRule, routeOf, limiter, publicAccess }: DeciderOptions): RequestDecider {
  function decide (method: string, path: string, rawHeaders: readonly string[], peer: string | undefined, now: number, route?: Route): Verdict | Promise<Verdict> {
    const keyHeader = route?.keyHeader
    // a public rule and no credential: anonymous, no credential read, no Redis
    if (publicAccess !== undefined) {
      const anonymous = publicAccess(method, path, rawHeaders, keyHeader, peer, now)
      if (anonymous !== undefined) {
        if (anonymous.ok) return anonymous
        return { ok: false, code: 'rate_limited', reason: 'rate_limited', challenge: undefined, keyId: undefined, rule: anonymous.rule, rateLimit: anonymous.rateLimit }
      }
    }
    // credential to authenticate: who is calling
    const auth = authenticate(rawHeaders, peer, now, keyHeader)
    if (!(auth instanceof Promise)) return howOften(mayThey(auth, method, path, peer, false), now)
    return auth.then((result) => howOften(mayThey(result, method, path, peer, true), Date.now()))
  }

  // rate limits: those that apply: every one is checked, the strictest decides
  function howOften (verdict: Verdict, now: number): Verdict | Promise<Verdict> {
    if (!verdict.ok || verdict.anonymous === true || limiter === undefined) return verdict
    const limited = limiter.check(verdict.identity, now)
    if (limited === undefined) return verdict
    if (!(limited instanceof Promise)) return limitedVerdict(verdict, limited)
    return limited.then((v) => v === undefined ? verdict : limitedVerdict(verdict, v))
  }

  // address, then authorize: the route rule: default deny, org constraint, permissions
  function mayThey (auth: Authentication, method: string, path: string, peer: string | undefined, fromRedis: boolean): Verdict {
    if (!auth.ok) return { ok: false, code: auth.code, reason: auth.reason, challenge: auth.challenge, keyId: auth.keyId, fromRedis: auth.keyId === undefined ? undefined : fromRedis }
    const { identity } = auth
    // address: before the rule, so a key used from elsewhere learns nothing of it
    if (!fromAllowedAddress(identity, peer)) {
      return { ok: false, code: 'forbidden', reason: 'address_not_allowed', challenge: challenges.insufficientScope(undefined), keyId: identity.keyId, identity, fromRedis }
    }
    const match = matchRule(method, path)
    const may = authorize(identity, match)
    if (!may.ok) {
      const refused: Refused = {
        ok: false,
        code: 'forbidden',
        reason: may.reason,
        challenge: challenges.insufficientScope(may.reason === 'missing_permission' ? may.scope : undefined),
        keyId: identity.keyId,
        identity,
        fromRedis
      }
      if (match !== null) refused.rule = match.rule
      return refused
    }
    return { ok: true, identity, rule: (match as NonNullable<typeof match>).rule, fromRedis }
  }

  function decideTarget (method: string, raw: string, rawHeaders: readonly string[], peer: string | undefined, now: number, host?: string): TargetVerdict | Promise<TargetVerdict> {
    // receive (the target policy), route prefix. Neither reads a header or Redis.
    const checked = checkTarget(raw)
    if (!checked.ok) return refusedTarget('bad_request', 'bad_path', undefined)
    const route = routeOf(checked.path, host)
    if (route === undefined) return refusedTarget('not_found', 'no_route', checked.path)
    const target: Target = { path: checked.path, query: checked.query, route }

    const verdict = decide(method, checked.path, rawHeaders, peer, now, route)
    if (!(verdict instanceof Promise)) return withTarget(verdict, target)
    return verdict.then((v) => withTarget(v, target))
  }

  return { decide, decideTarget }
}

function limitedVerdict (allowed: Allowed, v: RateLimitVerdict): Verdict {
  if (v.allowed) {
    allowed.rateLimit = v
    return allowed
  }
  const { identity, rule, fromRedis } = allowed
  if (v.reason === 'rate_limit_unavailable') return { ok: false, code: 'service_unavailable', reason: v.reason, challenge: undefined, keyId: identity.keyId, identity, rule, fromRedis }
  return { ok: false, code: 'rate_limited', reason: v.reason, challenge: undefined, keyId: identity.keyId, identity, rule, rateLimit: v, fromRedis }
}

function withTarget (verdict: Verdict, target: Target): TargetVerdict {
  const v = verdict as TargetVerdict
  v.target = target
  return v
}

function refusedTarget (code: ErrorCode, reason: Reason, path: string | undefined): TargetVerdict {
  return { ok: false, code, reason, challenge: undefined, keyId: undefined, target: undefined, path }
}
