/**
 * Security review, finding 6: the session and sign-in cookies had no `__Host-` prefix,
 * and of two cookies of one name the first won. A sibling subdomain (or a plain-http
 * page of the same host) could plant `keygate_session` with `Domain=` or a longer path,
 * so that a browser sent the attacker's session first and its person worked in the
 * attacker's console without knowing it.
 *
 * With `Secure` (an https redirect_uri) both cookies are `__Host-` cookies, which a
 * browser accepts only from this very origin with `Path=/` and no `Domain`, and the
 * plain names are not read; a request carrying the session cookie twice is refused
 * (401, reason `two_session_cookies`), and a callback carrying two sign-ins under way
 * takes neither.
 */
import t from 'tap'
import { HOST_PREFIX, LOGIN_COOKIE, readCookie, SESSION_COOKIE } from '../../src/admin/sso/index.js'
import { adminCall } from '../helpers/gateway.js'
import { sendCallback, ssoError, ssoWorld, walkToCallback } from '../helpers/oidc-provider.js'

const ID = 'a'.repeat(43)
const OTHER = 'b'.repeat(43)

t.test('which cookie is read', async (t) => {
  const host = `${HOST_PREFIX}${SESSION_COOKIE}`
  const rows: Array<[string, boolean, ReturnType<typeof readCookie>, string]> = [
    [`${host}=${ID}`, true, { id: ID, twice: false }, 'Secure: the __Host- cookie'],
    [`${SESSION_COOKIE}=${ID}`, true, { id: undefined, twice: false }, 'Secure: a plain one is anyone\'s to plant, unread'],
    [`${SESSION_COOKIE}=${OTHER}; ${host}=${ID}`, true, { id: ID, twice: false }, 'Secure: a planted plain one beside it, ignored'],
    [`${host}=${OTHER}; ${host}=${ID}`, true, { id: undefined, twice: true }, 'Secure: twice'],
    [`${SESSION_COOKIE}=${ID}`, false, { id: ID, twice: false }, 'plain http: the plain name'],
    [`${SESSION_COOKIE}=${OTHER}; other=1; ${SESSION_COOKIE}=${ID}`, false, { id: undefined, twice: true }, 'twice'],
    [`${host}=${OTHER}; ${SESSION_COOKIE}=${ID}`, false, { id: undefined, twice: true }, 'both names: twice'],
    ['other=1', false, { id: undefined, twice: false }, 'none']
  ]
  for (const [header, secure, want, label] of rows) t.same(readCookie(header, SESSION_COOKIE, secure), want, label)
})

t.test('a request carrying two session cookies is refused; a callback with two sign-ins takes neither', async (t) => {
  const w = await ssoWorld(t)
  const walk = await walkToCallback(w.adminUrl, 'dana', { redirectUri: w.redirectUri })
  const done = await sendCallback(walk.callback, walk.loginCookie)
  const session = done.session as string
  const me = async (cookie: string): Promise<number> =>
    (await adminCall(w.gw, 'GET', '/admin/v1/session', undefined, undefined, { Cookie: cookie })).status
  t.equal(await me(`${SESSION_COOKIE}=${session}`), 200, 'dana\'s session alone: signed in')
  const planted = await adminCall(w.gw, 'GET', '/admin/v1/session', undefined, undefined,
    { Cookie: `${SESSION_COOKIE}=${OTHER}; ${SESSION_COOKIE}=${session}` })
  t.equal(planted.status, 401, 'a planted one before it: refused, whichever comes first')
  t.equal((await w.gw.logOf(planted))?.reason, 'two_session_cookies')
  t.equal(await me(`${SESSION_COOKIE}=${session}; ${SESSION_COOKIE}=${OTHER}`), 401, 'after it: refused')
  t.equal(await me(`${HOST_PREFIX}${SESSION_COOKIE}=${OTHER}; ${SESSION_COOKIE}=${session}`), 401, 'both names: refused')

  const again = await walkToCallback(w.adminUrl, 'dana', { redirectUri: w.redirectUri })
  const two = await sendCallback(again.callback, `${LOGIN_COOKIE}=${ID}; ${again.loginCookie}`)
  t.equal(two.session, undefined, 'two sign-ins under way: no session')
  t.match(ssoError(two.location), /expired or was already used/)
})
