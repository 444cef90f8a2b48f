/**
 * A real OpenID provider for tests (src/demo/oidc-provider.ts: panva's oidc-provider)
 * on a free port, stopped with the test, and a browser-less walk through its own login
 * page over real HTTP: keygate's /console/sso/login, the provider's authorization
 * endpoint, its login form, and back to keygate's callback. The walk stops before the
 * callback, so a test can send the callback as it is, tampered with, or twice.
 */
import { createServer } from 'node:http'
import { exportJWK, generateKeyPair, SignJWT } from 'jose'
import { ssoErrorMessage } from '../../console/sso-errors.js'
import type { Test } from 'tap'
import { startDemoProvider, type DemoAccount, type DemoProvider } from '../../src/demo/oidc-provider.js'
import { startGateway, type TestGateway } from './gateway.js'
import { freePort } from './net.js'

export const CLIENT_ID = 'keygate-test'
export const CLIENT_SECRET = 'keygate-test-secret'

export async function startOidcProvider (t: Test, o: { redirectUris: string[], accounts: Record<string, DemoAccount>, port?: number }): Promise<DemoProvider> {
  const provider = await startDemoProvider({
    port: o.port ?? await freePort(),
    clients: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: o.redirectUris }],
    accounts: o.accounts
  })
  t.teardown(() => provider.close())
  return provider
}

/** One cookie jar per origin, enough for a walk through redirects. */
class Jar {
  private readonly cookies = new Map<string, Map<string, string>>()
  store (url: URL, res: Response): void {
    const jar = this.cookies.get(url.origin) ?? new Map<string, string>()
    this.cookies.set(url.origin, jar)
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = (pair as string).indexOf('=')
      jar.set((pair as string).slice(0, eq).trim(), (pair as string).slice(eq + 1).trim())
    }
  }

  header (url: URL): string {
    return [...(this.cookies.get(url.origin) ?? new Map<string, string>())].map(([k, v]) => `${k}=${v}`).join('; ')
  }
}

export interface Walk {
  /** the callback URL the provider sent the browser to (code, state, iss) */
  callback: URL
  /** the `keygate_sso_login=...` cookie keygate set at /console/sso/login */
  loginCookie: string
  /** the provider's authorization URL keygate redirected to */
  authorization: URL
}

/** From keygate's /console/sso/login through the provider's login page as `login`, up to (not into) keygate's callback. */
export async function walkToCallback (adminUrl: string, login: string, o: { redirectUri: string }): Promise<Walk> {
  const jar = new Jar()
  const start = new URL('/console/sso/login', adminUrl)
  const first = await fetch(start, { redirect: 'manual' })
  if (first.status !== 303) throw new Error(`/console/sso/login answered ${first.status}`)
  const loginLine = first.headers.getSetCookie().find((c) => c.startsWith('keygate_sso_login='))
  if (loginLine === undefined) throw new Error('no keygate_sso_login cookie')
  const authorization = new URL(first.headers.get('location') as string)
  let url = authorization
  for (let hop = 0; hop < 12; hop++) {
    if (url.href.startsWith(o.redirectUri)) return { callback: url, loginCookie: (loginLine.split(';')[0] as string), authorization }
    let res = await fetch(url, { redirect: 'manual', headers: { cookie: jar.header(url) } })
    jar.store(url, res)
    if (res.status === 200 && url.pathname.startsWith('/interaction/')) {
      // the provider's own login form
      const body = new URLSearchParams({ prompt: 'login', login, password: 'any' })
      const action = new URL(url.pathname, url)
      res = await fetch(action, { method: 'POST', redirect: 'manual', headers: { cookie: jar.header(action), 'content-type': 'application/x-www-form-urlencoded' }, body })
      jar.store(action, res)
    }
    const location = res.headers.get('location')
    if (location === null) throw new Error(`the walk stopped at ${url.pathname} with ${res.status}: ${(await res.text()).slice(0, 300)}`)
    url = new URL(location, url)
  }
  throw new Error('too many redirects')
}

export interface CallbackResult {
  status: number
  location: string | null
  /** every Set-Cookie line as sent */
  setCookies: string[]
  /** the keygate_session cookie's value, when one was set (not one being cleared) */
  session: string | undefined
}

/** keygate's callback, sent with `loginCookie`. */
export async function sendCallback (callback: URL, loginCookie: string | undefined): Promise<CallbackResult> {
  const res = await fetch(callback, { redirect: 'manual', headers: loginCookie === undefined ? {} : { cookie: loginCookie } })
  const setCookies = res.headers.getSetCookie()
  const line = setCookies.find((c) => c.startsWith('keygate_session=') && !/max-age=0/i.test(c))
  const session = line === undefined ? undefined : (line.split(';')[0] as string).slice('keygate_session='.length)
  return { status: res.status, location: res.headers.get('location'), setCookies, session }
}

/** The sentence the console shows for a failed sign-in's redirect (the code in its fragment). */
export function ssoError (location: string | null): string | undefined {
  if (location === null) return undefined
  return ssoErrorMessage(new URL(location).hash) ?? undefined
}

export type HostileMode = 'honest' | 'other-key' | 'expired' | 'wrong-audience' | 'nonce-replayed'

export interface HostileProvider {
  issuer: string
  mode: HostileMode
}

/**
 * A provider that signs its own ID tokens with `jose`, honestly or not: signed by a
 * key that is not in its JWK Set, expired, for another audience, or carrying the
 * nonce of an earlier sign-in. Its authorization endpoint answers at once (no login),
 * its token endpoint redeems any code it issued. `honest` shows the same provider is
 * accepted when it does not lie.
 */
export async function startHostileProvider (t: Test, o: { clientId: string, sub: string }): Promise<HostileProvider> {
  const port = await freePort()
  const issuer = `http://127.0.0.1:${port}`
  const published = await generateKeyPair('RS256')
  const other = await generateKeyPair('RS256')
  const jwk = { ...await exportJWK(published.publicKey), kid: 'k1', alg: 'RS256', use: 'sig' }
  const codes = new Map<string, string>()
  const nonces: string[] = []
  const state: HostileProvider = { issuer, mode: 'honest' }

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', issuer)
    const json = (body: unknown): void => { res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body)) }
    if (url.pathname === '/.well-known/openid-configuration') {
      json({
        issuer,
        authorization_endpoint: `${issuer}/auth`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256']
      })
    } else if (url.pathname === '/jwks') {
      json({ keys: [jwk] })
    } else if (url.pathname === '/auth') {
      const code = `code-${codes.size}-${Math.random().toString(36).slice(2)}`
      const nonce = url.searchParams.get('nonce') ?? ''
      nonces.push(nonce)
      codes.set(code, nonce)
      const back = new URL(url.searchParams.get('redirect_uri') ?? '')
      back.searchParams.set('code', code)
      back.searchParams.set('state', url.searchParams.get('state') ?? '')
      res.writeHead(303, { location: back.href }).end()
    } else if (url.pathname === '/token' && req.method === 'POST') {
      let body = ''
      req.on('data', (c: Buffer) => { body += c.toString() })
      req.on('end', () => {
        const code = new URLSearchParams(body).get('code') ?? ''
        const nonce = codes.get(code)
        if (nonce === undefined) {
          res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"invalid_grant"}')
          return
        }
        const now = Math.floor(Date.now() / 1000)
        const mode = state.mode
        const claims = { sub: o.sub, nonce: mode === 'nonce-replayed' ? nonces[0] : nonce, email: `${o.sub}@example.com`, email_verified: true }
        const jwt = new SignJWT(claims)
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setIssuer(issuer)
          .setAudience(mode === 'wrong-audience' ? 'someone-else' : o.clientId)
          .setIssuedAt(mode === 'expired' ? now - 7200 : now)
          .setExpirationTime(mode === 'expired' ? now - 3600 : now + 300)
        jwt.sign(mode === 'other-key' ? other.privateKey : published.privateKey).then((idToken) => {
          json({ access_token: 'at-' + code, token_type: 'Bearer', expires_in: 300, id_token: idToken })
        }, (err: unknown) => { res.writeHead(500).end(String(err)) })
      })
    } else {
      res.writeHead(404).end()
    }
  })
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return state
}

/** A sign-in through a provider that answers at once (the hostile one): to, not into, keygate's callback. */
export async function walkWithoutLogin (adminUrl: string): Promise<Walk> {
  const first = await fetch(new URL('/console/sso/login', adminUrl), { redirect: 'manual' })
  const loginLine = first.headers.getSetCookie().find((c) => c.startsWith('keygate_sso_login='))
  if (first.status !== 303 || loginLine === undefined) throw new Error(`/console/sso/login answered ${first.status}`)
  const authorization = new URL(first.headers.get('location') as string)
  const res = await fetch(authorization, { redirect: 'manual' })
  return { callback: new URL(res.headers.get('location') as string), loginCookie: loginLine.split(';')[0] as string, authorization }
}

// ---- a gateway with SSO against the real provider ----------------------------

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
export async function ssoWorld (
  t: Test,
  o: { match?: 'sub' | 'email', createUsers?: string, issuer?: string, yaml?: string } = {}
): Promise<SsoWorld> {
  const adminPort = await freePort()
  const adminUrl = `http://127.0.0.1:${adminPort}`
  const redirectUri = `${adminUrl}/console/sso/callback`
  const provider = o.issuer !== undefined ? { issuer: o.issuer } : await startOidcProvider(t, { redirectUris: [redirectUri], accounts: ACCOUNTS })
  const gw = await startGateway(t, {
    adminPort,
    env: { KEYGATE_OIDC_CLIENT_SECRET: CLIENT_SECRET, KEYGATE_ADMIN_TOKEN: ADMIN_TOKEN },
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
${o.yaml ?? ''}`
  })
  await gw.fixtures.role('self-service', ['users:read', 'keygate:keys:self'])
  await gw.fixtures.user('dana', 'acme', 'self-service')
  await gw.fixtures.hset(`${gw.prefix}user:dana`, 'email', 'dana@example.com')
  await gw.fixtures.user('erin', 'acme', 'self-service')
  await gw.fixtures.hset(`${gw.prefix}user:erin`, 'email', 'erin@example.com')
  return { gw, redirectUri, adminUrl, issuer: provider.issuer }
}

/** A whole sign-in as `login`; the callback's answer. */
export async function signIn (w: SsoWorld, login: string): Promise<CallbackResult> {
  const walk = await walkToCallback(w.adminUrl, login, { redirectUri: w.redirectUri })
  return await sendCallback(walk.callback, walk.loginCookie)
}

export const ADMIN_TOKEN = 'sso-test-admin-token-0123456789'

export const withSession = (session: string, extra: Record<string, string> = {}): Record<string, string> => ({ Cookie: `keygate_session=${session}`, ...extra })
