/**
 * The one way the decision is built, for every front end: the gateway's data plane
 * and authorizer (with the rate limits and the decision metrics), the WebSocket
 * re-check of open connections (without either), `keygate check` (without the rate
 * limiter: the limits are shown, never counted) and the admin sign-in (the
 * authentication alone, with the admin token; and a session's user, re-read through
 * the same cache). The rules and the route table are
 * compiled once per factory.
 */
import type { Config } from '../config/schema.js'
import type { IdentityResolver, ResolvedUser } from '../cache/resolve-identity.js'
import type { AuthMeter } from '../metrics/auth-metrics.js'
import type { Limiter } from '../ratelimit/limiter.js'
import type { QuotaMeter } from '../quota/meter.js'
import { createAuthenticator, type AuthenticateSignIn } from './authenticate-request.js'
import { createDecider, type RequestDecider } from './decide-request.js'
import { compileRules } from './match-rule.js'
import { createShadowDecider } from './shadow-rules.js'
import type { ShadowMeter } from '../metrics/shadow-metrics.js'
import type { ShadowRefusals } from '../usage/shadow-refusals.js'
import { compileRouteTable, type RouteTable } from './route-table.js'
import { createPublicAccess } from './public-access.js'
import type { AnonymousLimit } from '../ratelimit/anonymous.js'
import { keyPrefixesOf } from '../registry/key-format.js'
import { createKeyVerifier, type KeyVerifier } from './verify-key.js'

export interface DecisionFactory {
  /** the decision, receive to rate limits; without `limiter`, no rate limit applies */
  decider: (
    o?: {
      limiter?: Limiter | undefined
      quota?: QuotaMeter | undefined
      meter?: AuthMeter | undefined
      anonymous?: AnonymousLimit | undefined
      /** counts the shadow rules' differences (shadow-rules.ts) and the shadow restrictions' refusals */
      shadowMeter?: ShadowMeter | undefined
      /** what keys' shadow restrictions would refuse, per key (shadow-restriction.ts) */
      shadowRefusals?: ShadowRefusals | undefined
    }
  ) => RequestDecider
  /** the verify API's decisions (verify-key.ts): the same authentication and cache, the same limits and quotas */
  verifier: (o: { limiter?: Limiter | undefined, quota?: QuotaMeter | undefined, meter?: AuthMeter | undefined }) =>
  KeyVerifier
  /** the routes, compiled (route-table.ts) */
  routes: RouteTable
  /** the admin sign-in's authentication: the admin token, or a key as the data plane authenticates it */
  signIn: (isAdminToken: (token: string) => boolean) => AuthenticateSignIn
  /** a signed-in person's user and role (an SSO session), from the same cache as keys */
  user: (userId: string, now: number) => ResolvedUser | Promise<ResolvedUser>
}

/** `methods`: every method a request can have (src/http/methods.ts). */
export function decisionFactory (
  config: Config,
  resolver: IdentityResolver,
  methods: readonly string[]
): DecisionFactory {
  const keyPrefix = keyPrefixesOf(config.keys)
  const acceptImported = config.keys.accept_imported
  const matchRule = compileRules(config.rules, methods)
  const routes = compileRouteTable(
    config.routes, config.self_service.enabled ? config.self_service.prefix : undefined
  )
  const anyPublic = config.rules.some((r) => r.public === true)
  // (none configured: no shadow at all, so the decision pays one comparison)
  const shadow = config.shadow_rules.length === 0
    ? undefined
    : createShadowDecider(matchRule, compileRules(config.shadow_rules, methods))
  return {
    decider: ({ limiter, quota, meter, anonymous, shadowMeter, shadowRefusals } = {}) => createDecider({
      authenticate: createAuthenticator({ keyPrefix, acceptImported, resolver, meter }),
      matchRule,
      routeOf: routes.routeOf,
      limiter,
      quota,
      publicAccess: createPublicAccess(matchRule, anyPublic, anonymous),
      shadow,
      onShadow: shadowMeter === undefined
        ? undefined
        : (note) => { shadowMeter.difference(note.rule, note.live, note.shadow) },
      onShadowRestriction: shadowRefusals === undefined
        ? undefined
        : (identity, method, path, reason, now) => { shadowRefusals.note(identity.keyId, method, path, reason, now) }
    }),
    verifier: ({ limiter, quota, meter }) => createKeyVerifier({
      authenticate: createAuthenticator({ keyPrefix, acceptImported, resolver, meter }), limiter, quota
    }),
    routes,
    signIn: (isAdminToken) => createAuthenticator({ keyPrefix, acceptImported, resolver, isAdminToken }),
    user: (userId, now) => resolver.resolveUser(userId, now)
  }
}
