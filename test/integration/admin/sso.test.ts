/**
 * SSO against a real OpenID provider (oidc-provider, test/helpers/oidc-provider.ts)
 * over real HTTP: the flow through the provider's own login form, the session it
 * begins on the admin API, and each way the sign-in is refused with no session.
 */
import t, { type Test } from 'tap'
import { adminCall, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { freePort } from '../../helpers/net.js'
import { CLIENT_ID, CLIENT_SECRET, sendCallback, ssoError, startOidcProvider, walkToCallback } from '../../helpers/oidc-provider.js'
import type { DemoAccount } from '../../../src/demo/oidc-provider.js'

export const ACCOUNTS: Record<string, DemoAccount> = {
  dana: { email: 'Dana@Example.com', email_verified: true, name: 'Dana' },
  erin: { email: 'erin@example.com', email_verified: false, name: 'Erin' },
  mallory: { email: 'mallory@example.com', email_verified: true, name: 'Mallory' }
}

export interface SsoWorld {
  gw: TestGateway
  redirectUri: string
  adminUrl: string
  issuer: string
}

/** A gateway with sso.oidc pointing at a real provider; users dana (keygate:keys:self) and erin. */
export async function ssoWorld (t: Test, o: { match?: 'sub' | 'email', createUsers?: string, extraYaml?: string, adminPort?: number, redirectUri?: string } = {}): Promise<SsoWorld> {
  const adminPort = o.adminPort ?? await freePort()
  const adminUrl = `http://127.0.0.1:${adminPort}`
  const redirectUri = o.redirectUri ?? `${adminUrl}/console/sso/callback`
  const provider = await startOidcProvider(t, { redirectUris: [redirectUri], accounts: ACCOUNTS })
  const gw = await startGateway(t, {
    adminPort,
    env: { KEYGATE_OIDC_CLIENT_SECRET: CLIENT_SECRET },
    yaml: `
sso:
  session_ttl: 1h
  oidc:
    issuer: "${provider.issuer}"
    client_id: ${CLIENT_ID}
    redirect_uri: "${redirectUri}"
    match: ${o.match ?? 'sub'}
    display_name: Test IdP
${o.createUsers ?? ''}
${o.extraYaml ?? ''}`
  })
  await gw.fixtures.role('self-service', ['users:read', 'keygate:keys:self'])
  await gw.fixtures.user('dana', 'acme', 'self-service')
  await gw.fixtures.hset(`${gw.prefix}user:dana`, 'email', 'dana@example.com')
  await gw.fixtures.user('erin', 'acme', 'self-service')
  await gw.fixtures.hset(`${gw.prefix}user:erin`, 'email', 'erin@example.com')
  return { gw, redirectUri, adminUrl, issuer: provider.issuer }
}

/** A whole sign-in as `login`; the callback's answer. */
export async function signIn (w: SsoWorld, login: string): Promise<ReturnType<typeof sendCallback>> {
  const walk = await walkToCallback(w.adminUrl, login, { redirectUri: w.redirectUri })
  return await sendCallback(walk.callback, walk.loginCookie)
}

export const withSession = (session: string, extra: Record<string, string> = {}): Record<string, string> => ({ Cookie: `keygate_session=${session}`, ...extra })

t.test('the happy path: the provider\'s login page, a session, and what a personal key of that user may do', async (t) => {
  const w = await ssoWorld(t)
  const done = await signIn(w, 'dana')
  t.equal(done.status, 303)
  t.equal(done.location, `${w.adminUrl}/console/`, 'back to the console')
  t.ok(done.session !== undefined && done.session.length >= 22, 'a session id of at least 128 bits')
  const line = done.setCookies.find((c) => c.startsWith('keygate_session=') && !/Max-Age=0/i.test(c)) as string
  t.match(line, /; HttpOnly/i)
  t.match(line, /; SameSite=Strict/i)
  t.match(line, /; Path=\//)
  t.notMatch(line, /; Secure/i, 'an http:// redirect_uri: no Secure attribute')
  t.notMatch(line, /Domain=/i)

  const session = done.session as string
  const me = await adminCall(w.gw, 'GET', '/admin/v1/session', undefined, undefined, withSession(session))
  t.equal(me.status, 200, me.body)
  t.match(JSON.parse(me.body), { principal: { kind: 'session', user: 'dana', org: 'acme', role: 'self-service' }, scope: 'self' })

  // a personal key of one's own: created_by user:dana, and it works on the gateway
  const created = await adminCall(w.gw, 'POST', '/admin/v1/keys', undefined, { type: 'personal', name: 'laptop' }, withSession(session, { 'X-Requested-With': 'keygate' }))
  t.equal(created.status, 201, created.body)
  const key = JSON.parse(created.body) as { id: string, key: string }
  const shown = await adminCall(w.gw, 'GET', `/admin/v1/keys/${key.id}`, undefined, undefined, withSession(session))
  t.match(JSON.parse(shown.body), { user: 'dana', created_by: 'user:dana' }, 'created from a session: created_by user:<id>')
  t.equal((await w.gw.get('/api/v1/users', key.key)).status, 200)
  // another user's key: as a self principal, refused
  const other = await adminCall(w.gw, 'POST', '/admin/v1/keys', undefined, { type: 'personal', user: 'erin' }, withSession(session, { 'X-Requested-With': 'keygate' }))
  t.equal(other.status, 403)

  // the log: the user id, never the session id, code or state
  const raw = w.gw.rawLogs.join('\n')
  t.notOk(raw.includes(session), 'no session id in a log line')
  t.match(raw, /"sso sign-in"/)
  t.match(raw, /"user":"dana"/)
})
