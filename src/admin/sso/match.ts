/**
 * Who a person signed in at the provider is in keygate: the active user the claim
 * matches (`sso.oidc.match`):
 *
 *   sub     the ID token's `sub` is a keygate user id
 *   email   the ID token's `email` equals a user record's `email` (compared without
 *           regard to case), and the provider reports it verified (`email_verified: true`);
 *           two users with that email: refused, as neither is the person for sure
 *
 * No such user, or a deactivated one: refused, with a code (`SsoRefusal`) and the
 * claim's value, which the console turns into its own message, and nothing created;
 * unless `create_users` asks for a new user with that
 * org and role, created through the admin actions as the actor `sso:<issuer>` (audited
 * as `user.create`). Each sign-in is audited as `session.begin` with the claim that
 * matched (createSignInAudit).
 */
import type { Config, OidcConfig } from '../../config/schema.js'
import type { RegistryClient } from '../../registry/redis-client.js'
import { NAME } from '../../registry/records.js'
import { adminActions, adminWing } from '../actions/index.js'
import { AdminError, ifMissing } from '../model/errors.js'
import { FULL_ADMIN } from '../model/principal.js'
import type { UserView } from '../model/views.js'
import type { Claims } from './oidc.js'

export type Match =
  /** `claim`, `value`: what matched the user (the audit's `session.begin` records both) */
  | { ok: true, user: string, org: string, created: boolean, claim: 'sub' | 'email', value: string }
  /** `code`, `claim`: for the person, on the console's sign-in page (never for a log line) */
  | { ok: false, code: SsoRefusal, claim?: Claim | undefined }

/**
 * Why a person matched no user; the console shows its own fixed sentence for each, naming the claim's value
 * (docs/sso.md).
 */
export type SsoRefusal =
  | 'no_user' | 'user_deactivated' | 'no_user_bad_id' | 'no_user_id_taken' | 'no_email' | 'email_unverified'
  | 'email_ambiguous'

export interface Claim { claim: 'sub' | 'email', value: string }

/** The audit entry of a sign-in (`session.begin`, with the claim that matched), written before the session begins. */
export function createSignInAudit (config: Config, redis: RegistryClient): (m: Match & { ok: true }) => Promise<void> {
  const c = config.sso.oidc as OidcConfig
  const actions = adminActions(adminWing(config, redis), FULL_ADMIN, `sso:${c.issuer}`)
  return async (m) => { await actions.recordSignIn(m.user, m.org, { claim: m.claim, value: m.value }) }
}

export function createMatcher (config: Config, redis: RegistryClient): (claims: Claims) => Promise<Match> {
  const c = config.sso.oidc as OidcConfig
  const actions = adminActions(adminWing(config, redis), FULL_ADMIN, `sso:${c.issuer}`)

  async function userOf (id: string): Promise<UserView | undefined> {
    return await actions.showUser(id).catch(ifMissing(undefined))
  }

  async function found (id: string, claim: Claim): Promise<Match> {
    const user = await userOf(id)
    if (user?.status === undefined || user.org === undefined) {
      return { ok: false, code: 'no_user', claim }
    }
    if (user.status !== 'active') return { ok: false, code: 'user_deactivated', claim }
    return { ok: true, user: id, org: user.org, created: false, ...claim }
  }

  async function create (id: string, email: string | undefined, claim: Claim): Promise<Match> {
    const make = c.create_users
    if (make === undefined) return { ok: false, code: 'no_user', claim }
    if (!NAME.test(id)) {
      return { ok: false, code: 'no_user_bad_id', claim }
    }
    if (await userOf(id) !== undefined) {
      return { ok: false, code: 'no_user_id_taken', claim }
    }
    try {
      await actions.putUser(id, { org: make.org, role: make.role, email }, { createOnly: true })
    } catch (err: unknown) {
      // (created meanwhile by someone else: not this person's to take)
      if (err instanceof AdminError && err.kind === 'conflict') {
        return { ok: false, code: 'no_user_id_taken', claim }
      }
      throw err
    }
    return { ok: true, user: id, org: make.org, created: true, ...claim }
  }

  async function byEmail (claims: Claims): Promise<Match> {
    const email = claims.email
    if (typeof email !== 'string' || email === '') return { ok: false, code: 'no_email' }
    const claim: Claim = { claim: 'email', value: email }
    if (claims.email_verified !== true) return { ok: false, code: 'email_unverified', claim }
    const wanted = email.toLowerCase()
    const matches = (await actions.listUsers()).filter((u) => u.email?.toLowerCase() === wanted).map((u) => u.id)
    if (matches.length > 1) return { ok: false, code: 'email_ambiguous', claim }
    if (matches.length === 1) return await found(matches[0] as string, claim)
    return await create(email, email, claim)
  }

  async function bySub (claims: Claims): Promise<Match> {
    const sub = claims.sub
    const claim: Claim = { claim: 'sub', value: sub }
    if (!NAME.test(sub)) return await create(sub, undefined, claim)
    const m = await found(sub, claim)
    if (m.ok || await userOf(sub) !== undefined) return m
    return await create(
      sub,
      claims.email_verified === true && typeof claims.email === 'string' ? claims.email : undefined,
      claim
    )
  }

  return async (claims) => c.match === 'email' ? await byEmail(claims) : await bySub(claims)
}
