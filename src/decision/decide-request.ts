/**
 * The decision on one request, as one function that every front end calls: the data
 * plane's gate, the authorizer listener (src/authorizer/), the WebSocket upgrade and
 * re-decision, and `keygate check`. Its stages, in the order of STAGES (stages.ts):
 *
 *   receive          the target policy: origin-form, no dot segments, no encoded `/`...: 400
 *                                                                           target-policy.ts
 *   route prefix     a path under no configured prefix: 404                 route-table.ts
 *   credential to    who is calling: credential, key format, records,
 *   authenticate     key state: 401 / 503                                   authenticate-request.ts
 *   then the list    address (403), authorize (403), rate limits (429/503),
 *                    quota (429/503), each one file, run in order          stages/index.ts
 *
 * `decideTarget` runs them all on a raw request target. The data plane runs receive
 * and route prefix as fastify's URL rewrite and router (the same checkTarget, the
 * router built from the same patterns and options as the route table), and calls
 * `decide` for the rest. A request refused before the rate limits consumes none.
 *
 * The result is synchronous when every record is cached and no stage waits (no
 * promise on the hot path), a promise otherwise. A refusal names its error code, its
 * reason for the log line and its RFC 6750 challenge.
 */
import type { ErrorCode, Reason } from '../errors.js'
import type { AuthenticateRequest, Authentication } from './authenticate-request.js'
import { challenges } from './challenges.js'
import type { RuleMatcher } from './match-rule.js'
import type { Limiter } from '../ratelimit/limiter.js'
import type { QuotaMeter } from '../quota/meter.js'
import { DECISION_STAGES } from './stages/index.js'
import type { DecisionStage, StageCheck } from './stages/stage.js'
import { checkTarget } from './target-policy.js'
import { refusal, type Allowed, type Passing, type Refused, type ShadowNote, type Verdict } from './verdict.js'
import type { PublicAccess } from './public-access.js'
import type { ShadowDecider } from './shadow-rules.js'
import { KEY_RESTRICTION, shadowRestrictionRefusal, type ShadowRefusal } from './shadow-restriction.js'
import type { Identity } from './identity.js'
import type { Route } from './route-table.js'

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
  decide: (
    method: string, path: string, rawHeaders: readonly string[], peer: string | undefined, now: number, route?: Route
  ) => Verdict | Promise<Verdict>
  /** receive to rate limits, for a raw request target; `host`: its Host header (routes with `hosts`) */
  decideTarget: (
    method: string, target: string, rawHeaders: readonly string[], peer: string | undefined, now: number, host?: string
  ) => TargetVerdict | Promise<TargetVerdict>
}

export interface DeciderOptions {
  authenticate: AuthenticateRequest
  matchRule: RuleMatcher
  /** the route table (route-table.ts) */
  routeOf: (path: string, host?: string) => Route | undefined
  /** the rate limits (src/ratelimit/); without one, none apply */
  limiter?: Limiter | undefined
  /** quotas and credits (src/quota/); without a meter, none apply */
  quota?: QuotaMeter | undefined
  /** the stages after authentication, in order: DECISION_STAGES (stages/index.ts) */
  stages?: readonly DecisionStage[]
  /** public rules, when any rule is public (public-access.ts) */
  publicAccess?: PublicAccess | undefined
  /** shadow rules, when configured (shadow-rules.ts): a difference is noted on the verdict, never changes it */
  shadow?: ShadowDecider | undefined
  /** told of each difference (the metric) */
  onShadow?: ((note: ShadowNote) => void) | undefined
  /**
   * told of each request a key's shadow restriction would refuse (shadow-restriction.ts): counted per key off the
   * request path. `path`: the decided path, without its query.
   */
  onShadowRestriction?: ((identity: Identity, method: string, path: string, reason: ShadowRefusal, now: number) => void)
  | undefined
}

export function createDecider ({
  authenticate,
  matchRule,
  routeOf,
  limiter,
  quota,
  stages = DECISION_STAGES,
  publicAccess,
  shadow,
  onShadow,
  onShadowRestriction
}: DeciderOptions): RequestDecider {
  const checks: readonly StageCheck[] = stages.map((s) => s.build({ matchRule, limiter, quota }))

  function decide (
    method: string, path: string, rawHeaders: readonly string[], peer: string | undefined, now: number, route?: Route
  ): Verdict | Promise<Verdict> {
    const keyHeader = route?.keyHeader
    // a public rule and no credential: anonymous, no credential read, no Redis (public-access.ts)
    if (publicAccess !== undefined) {
      const anonymous = publicAccess(method, path, rawHeaders, keyHeader, peer, now)
      if (anonymous !== undefined) return anonymous
    }
    // credential to authenticate: who is calling (`Authorization`, or the route's key header)
    const auth = authenticate(rawHeaders, peer, now, keyHeader)
    if (!(auth instanceof Promise)) return authenticated(auth, method, path, peer, now, false, route)
    return auth.then((result) => authenticated(result, method, path, peer, Date.now(), true, route))
  }

  // then the stages after authentication, in the order of the list
  function authenticated (
    auth: Authentication, method: string, path: string, client: string | undefined, now: number, fromRedis: boolean,
    route: Route | undefined
  ): Verdict | Promise<Verdict> {
    if (!auth.ok) {
      const { code, reason, challenge, keyId } = auth
      return { ok: false, code, reason, challenge, keyId, fromRedis: keyId === undefined ? undefined : fromRedis }
    }
    const identity = auth.identity
    const passing: Passing = { ok: true, identity, rule: undefined, fromRedis, route }
    const verdict = runStages(checks, 0, passing, method, path, client, now)
    // (shadow rules off and no shadow restriction on the key: these two comparisons are all they cost)
    if (shadow === undefined && identity.shadowRestriction === undefined) return verdict
    if (!(verdict instanceof Promise)) return withShadow(verdict, identity, method, path, client, now)
    return verdict.then((v) => withShadow(v, identity, method, path, client, Date.now()))
  }

  /**
   * the shadow rules' difference and what the key's shadow restriction would refuse, noted on the
   * verdict and counted; neither: the verdict as it is. The answer never changes.
   */
  function withShadow (
    verdict: Verdict, identity: Identity, method: string, path: string, client: string | undefined, now: number
  ): Verdict {
    let note = shadow?.(identity, method, path, verdict)
    if (note !== undefined) onShadow?.(note)
    const refused = verdict.ok && verdict.rule !== undefined
      ? shadowRestrictionRefusal(identity, verdict.rule, client)
      : undefined
    if (refused !== undefined) {
      const restricted: ShadowNote = { rule: KEY_RESTRICTION, live: 'allow', shadow: refused }
      onShadow?.(restricted)
      onShadowRestriction?.(identity, method, path, refused, now)
      note ??= restricted
    }
    // (a verdict after authentication: allowed with a key, or refused)
    if (note !== undefined) (verdict as Allowed | Refused).shadow = note
    return verdict
  }

  function decideTarget (
    method: string, raw: string, rawHeaders: readonly string[], peer: string | undefined, now: number, host?: string
  ): TargetVerdict | Promise<TargetVerdict> {
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

/**
 * The checks from `from` on, in order, until one refuses; a check that waits hands the
 * rest to its answer, with the time of that answer. Allowed only with a rule: a list
 * that lost its authorize stage allows nothing (fail closed).
 */
export function runStages (
  checks: readonly StageCheck[], from: number, p: Passing, method: string, path: string, client: string | undefined,
  now: number
): Verdict | Promise<Verdict> {
  for (let i = from; i < checks.length; i++) {
    const result = (checks[i] as StageCheck)(p, method, path, client, now)
    if (result === undefined) continue
    if (!(result instanceof Promise)) return result
    const next = i + 1
    return result.then((refused) => refused ?? runStages(checks, next, p, method, path, client, Date.now()))
  }
  if (p.rule === undefined) return refusal(p, 'forbidden', 'no_rule', challenges.insufficientScope(undefined))
  return p as Allowed
}

function withTarget (verdict: Verdict, target: Target): TargetVerdict {
  const v = verdict as TargetVerdict
  v.target = target
  return v
}

function refusedTarget (code: ErrorCode, reason: Reason, path: string | undefined): TargetVerdict {
  return { ok: false, code, reason, challenge: undefined, keyId: undefined, target: undefined, path }
}
