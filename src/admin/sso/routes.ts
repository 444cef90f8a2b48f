/**
 * The SSO routes of the admin listener (docs/sso.md):
 *
 *   GET /console/sso/provider  the provider's display name, for the console's button
 *   GET /console/sso/login     records a sign-in under way (state, nonce, PKCE
 *                              verifier: sessions.ts) bound to a cookie, and sends
 *                              the browser to the provider
 *   GET <redirect_uri's path>  the provider's answer: the sign-in under way is taken
 *                              (once), openid-client checks the answer and the ID
 *                              token, the person is matched to a user, a session is
 *                              begun, and the browser goes to the console
 *
 * Each sign-in begun keeps a small record in Redis for 10 minutes, so a client begins
 * at most LOGIN_STARTS_PER_MINUTE a minute (per instance; the client is the TCP peer, or
 * the one a trusted proxy reports: behind the TLS proxy every browser shares the proxy's
 * address), and the instance at most LOGIN_STARTS_PER_MINUTE_IN_ALL (so the records
 * stored are bounded whatever the number of addresses); past either, the console's
 * sign-in page says when to try again.
 *
 * Any failure sends the browser to the console's sign-in page with a code in the URL's
 * fragment (never sent to a server, so never in a log) and no session:
 * `#sso_error=<code>`, with `&claim=<sub|email>&value=<the claim's value>` or
 * `&retry=<seconds>` where they apply. The console shows its own fixed sentence for each
 * code (console/sso-errors.js), never text a link carries, so a link crafted to put words
 * on keygate's sign-in page gets nothing shown but those sentences. The log
 * line of a sign-in names its outcome and, when one matched, the user id: never a
 * code, token, state, session id or any other claim.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import { SSO_LOGIN_PATH, SSO_PROVIDER_PATH } from '../../config/sso.js'
import { clientAddressOf } from '../../http/peers.js'
import { peerOf } from '../../peer.js'
import { createSignInLimit } from '../api/sign-in-limit.js'
import { LOGIN_COOKIE, loginCookie, readCookie, sessionCookie, type Sso } from './index.js'
import type { Claim } from './match.js'

/** sign-ins begun per client address and minute: far above a person's, far below a flood's */
export const LOGIN_STARTS_PER_MINUTE = 120
/** sign-ins begun per instance and minute, all clients together: at most 10x this many records stored */
export const LOGIN_STARTS_PER_MINUTE_IN_ALL = 1200

export function ssoRoutes (
  app: FastifyInstance,
  sso: Sso,
  o: { redirectUri: string, trustedProxies: readonly string[] },
  logger: Logger
): void {
  const redirectUri = o.redirectUri
  const oidc = sso.oidc
  if (oidc === undefined) return
  const consoleUrl = new URL('/console/', redirectUri).href
  const callbackPath = new URL(redirectUri).pathname

  const fail = (
    request: FastifyRequest, reply: FastifyReply, outcome: string, err?: unknown, o: FailParams = {}
  ): FastifyReply => {
    logger.warn({ req_id: request.id, outcome, error: errorCode(err) }, 'sso sign-in refused')
    reply.header('set-cookie', loginCookie(sso, undefined))
    return reply.code(303).header('location', `${consoleUrl}#${failureFragment(o.code ?? outcome, o)}`).send()
  }

  // what the console's sign-in page shows: the button's name (no credential needed)
  const provider = JSON.stringify({ display_name: oidc.displayName })
  app.get(SSO_PROVIDER_PATH, async (_request, reply) =>
    await reply.type('application/json; charset=utf-8').send(provider))

  const starts = createSignInLimit({ perMinute: LOGIN_STARTS_PER_MINUTE })
  const allStarts = createSignInLimit({ perMinute: LOGIN_STARTS_PER_MINUTE_IN_ALL })
  const clientOf = clientAddressOf(o.trustedProxies)
  app.get(SSO_LOGIN_PATH, async (request, reply) => {
    const start = starts.attempt(peerOf(clientOf(request.raw.socket, request.raw.rawHeaders)))
    if (typeof start === 'number') {
      return fail(request, reply, 'too_many_sign_ins', undefined, { code: 'too_many_sign_ins_here', retry: start })
    }
    const any = allStarts.attempt('(all)')
    if (typeof any === 'number') {
      start.passed()
      return fail(request, reply, 'too_many_sign_ins', undefined, { retry: any })
    }
    // (every start counts, whatever comes of it)
    start.failed()
    any.failed()
    let begun
    try {
      begun = await oidc.flow.begin()
    } catch (err: unknown) {
      return fail(request, reply, 'provider_unreachable', err)
    }
    const id = await sso.sessions.beginLogin(begun.pending)
    reply.header('set-cookie', loginCookie(sso, id))
    return reply.code(303).header('location', begun.url.href).send()
  })

  app.get(callbackPath, async (request, reply) => {
    const login = readCookie(request.headers.cookie, LOGIN_COOKIE, sso.secure)
    // (two sign-ins under way at once: one may be planted, so neither is taken)
    if (login.twice) return fail(request, reply, 'two_login_cookies', undefined, { code: 'no_login' })
    const pending = login.id === undefined ? undefined : await sso.sessions.takeLogin(login.id)
    if (pending === undefined) {
      return fail(request, reply, 'no_login')
    }
    const q = request.raw.url?.indexOf('?') ?? -1
    const query = q === -1 ? '' : (request.raw.url as string).slice(q + 1)
    let claims
    try {
      claims = await oidc.flow.finish(query, pending)
    } catch (err: unknown) {
      return fail(request, reply, 'provider_answer_refused', err)
    }
    let match
    try {
      match = await oidc.match(claims)
      // audited before the session begins: no session without its entry
      if (match.ok) await oidc.audit(match)
    } catch (err: unknown) {
      return fail(request, reply, 'match_failed', err)
    }
    if (!match.ok) return fail(request, reply, 'no_user', undefined, { code: match.code, claim: match.claim })
    const id = await sso.sessions.begin(match.user, match.org, Date.now())
    logger.info({ req_id: request.id, outcome: 'signed_in', user: match.user, created: match.created }, 'sso sign-in')
    reply.header('set-cookie', [loginCookie(sso, undefined), sessionCookie(sso, id)])
    return reply.code(303).header('location', consoleUrl).send()
  })
}

interface FailParams {
  /** the console's code, when it is not the log line's outcome */
  code?: string
  claim?: Claim | undefined
  retry?: number
}

/** `sso_error=<code>`, and the claim's value or the seconds to wait, for the console's fixed sentence. */
export function failureFragment (code: string, o: FailParams = {}): string {
  const q = new URLSearchParams({ sso_error: code })
  if (o.claim !== undefined) {
    q.set('claim', o.claim.claim)
    q.set('value', o.claim.value)
  }
  if (o.retry !== undefined) q.set('retry', String(o.retry))
  return q.toString()
}

/**
 * What a log line may say of a failure: openid-client's error code or the error's class, never its message (it may
 * quote a claim).
 */
function errorCode (err: unknown): string | undefined {
  if (err === undefined) return undefined
  if (typeof err === 'object' && err !== null) {
    const code = (err as { code?: unknown }).code
    if (typeof code === 'string' && /^[A-Z0-9_]{1,64}$/.test(code)) return code
    const error = (err as { error?: unknown }).error
    if (typeof error === 'string' && /^[a-z0-9_]{1,64}$/.test(error)) return `provider:${error}`
    if (err instanceof Error) return err.name
  }
  return 'unknown'
}
