/**
 * A real OpenID provider for tests (src/demo/oidc-provider.ts: panva's oidc-provider)
 * on a free port, stopped with the test, and a browser-less walk through its own login
 * page over real HTTP: keygate's /console/sso/login, the provider's authorization
 * endpoint, its login form, and back to keygate's callback. The walk stops before the
 * callback, so a test can send the callback as it is, tampered with, or twice.
 */
import type { Test } from 'tap'
import { startDemoProvider, type DemoAccount, type DemoProvider } from '../../src/demo/oidc-provider.js'
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

/** The message a failed sign-in sends to the console (the fragment of its redirect). */
export function ssoError (location: string | null): string | undefined {
  if (location === null) return undefined
  const hash = new URL(location).hash
  return hash.startsWith('#sso_error=') ? decodeURIComponent(hash.slice('#sso_error='.length)) : undefined
}
