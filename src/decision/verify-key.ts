/**
 * The verify API's decision (docs/verify.md): "is this key valid, and may it do these
 * things?", asked by a service that does not sit behind keygate. Two decisions, each
 * through the gateway's own authentication (the same cache, so the same revocation
 * bound) and the same stages after it (stages/):
 *
 *   the caller    its `Authorization: Bearer` key: credential to authenticate (401),
 *                 address (403), `keygate:keys:verify` granted by name (403), its
 *                 rate limits (429)
 *   the key       the key in the body: credential to authenticate, then environment
 *                 (a test key has no route here: refused), address (the verify
 *                 caller's address), the permissions asked for in place of a rule,
 *                 its rate limits, and its quota and credits: `cost` units needed
 *                 and spent when given, none needed or spent otherwise (read, to answer)
 *
 * Protocol-neutral: src/authorizer/verify-route.ts reads the body and answers.
 */
import type { AuthenticateRequest, Authentication } from './authenticate-request.js'
import { challenges } from './challenges.js'
import { runStages } from './decide-request.js'
import type { CompiledRule } from './match-rule.js'
import type { Limiter } from '../ratelimit/limiter.js'
import type { QuotaMeter } from '../quota/meter.js'
import { address } from './stages/address.js'
import { environment } from './stages/environment.js'
import { quota as quotaStage } from './stages/quota.js'
import { rateLimits } from './stages/rate-limits.js'
import type { StageCheck, StageParts } from './stages/stage.js'
import { refusal, type Passing, type Verdict } from './verdict.js'

export const VERIFY_PATH = '/v1/verify'
/** what a verify caller's key must grant, by name (no wildcard grants a `keygate:` permission) */
export const VERIFY_PERMISSION = 'keygate:keys:verify'

/** A verify request's body, validated (src/authorizer/verify-route.ts). */
export interface VerifyQuestion {
  key: string
  /** each one a permission as a rule requires it (config/permission.ts) */
  permissions: readonly string[]
  /** units of the key's quota and credits needed and spent; undefined: none (the allowance is read, not spent) */
  cost: number | undefined
}

export interface KeyVerifier {
  /** the caller, from the verify request's own headers */
  caller: (rawHeaders: readonly string[], client: string | undefined, now: number) => Verdict | Promise<Verdict>
  /**
   * a key about itself (src/data-plane/self-service.ts), from the request's own headers: authenticate, address,
   * rate limits; what it may do there is the front end's to say
   */
  self: (rawHeaders: readonly string[], client: string | undefined, now: number) => Verdict | Promise<Verdict>
  /** the key in the body; `client`: the verify caller's address */
  verify: (q: VerifyQuestion, client: string | undefined, now: number) => Verdict | Promise<Verdict>
}

export interface KeyVerifierOptions {
  authenticate: AuthenticateRequest
  limiter?: Limiter | undefined
  quota?: QuotaMeter | undefined
}

/** The rule a verify request stands in for: its permissions and its cost, matched by no route. */
function verifyRule (permissions: readonly string[], cost: number): CompiledRule {
  return {
    index: -1,
    method: 'POST',
    path: VERIFY_PATH,
    permissions,
    scope: permissions.join(' '),
    orgParam: undefined,
    public: false,
    cost,
    defaultCost: cost
  }
}

/** authorize, with the permissions asked for as the rule's: every one granted, or 403 `missing_permission` */
function permitted (rule: CompiledRule): StageCheck {
  return (p) => {
    p.rule = rule
    if (p.identity.grants.hasAll(rule.permissions)) return undefined
    return refusal(p, 'forbidden', 'missing_permission', challenges.insufficientScope(rule.scope))
  }
}

export function createKeyVerifier (o: KeyVerifierOptions): KeyVerifier {
  const parts: StageParts = { matchRule: () => null, limiter: o.limiter, quota: o.quota }
  const env = environment.build(parts)
  const from = address.build(parts)
  const limits = rateLimits.build(parts)
  const spend = quotaStage.build(parts)
  const callerChecks: readonly StageCheck[] = [from, permitted(verifyRule([VERIFY_PERMISSION], 0)), limits]
  const selfChecks: readonly StageCheck[] = [from, permitted(verifyRule([], 0)), limits]

  function decided (
    auth: Authentication, checks: readonly StageCheck[], client: string | undefined, now: number, fromRedis: boolean
  ): Verdict | Promise<Verdict> {
    if (!auth.ok) {
      const { code, reason, challenge, keyId } = auth
      return { ok: false, code, reason, challenge, keyId, fromRedis: keyId === undefined ? undefined : fromRedis }
    }
    const p: Passing = { ok: true, identity: auth.identity, rule: undefined, fromRedis, route: undefined }
    return runStages(checks, 0, p, 'POST', VERIFY_PATH, client, now)
  }

  function run (
    rawHeaders: readonly string[], checks: readonly StageCheck[], client: string | undefined, now: number
  ): Verdict | Promise<Verdict> {
    const auth = o.authenticate(rawHeaders, client, now)
    if (!(auth instanceof Promise)) return decided(auth, checks, client, now, false)
    return auth.then((a) => decided(a, checks, client, Date.now(), true))
  }

  return {
    caller: (rawHeaders, client, now) => run(rawHeaders, callerChecks, client, now),
    self: (rawHeaders, client, now) => run(rawHeaders, selfChecks, client, now),
    verify (q, client, now) {
      // without a cost, the allowance is read as a rule of cost 0 reads it: nothing needed, nothing spent
      const rule = verifyRule(q.permissions, q.cost ?? 0)
      return run(['authorization', `Bearer ${q.key}`], [env, from, permitted(rule), limits, spend], client, now)
    }
  }
}
