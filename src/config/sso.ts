/** The checks of the `sso` section the schema cannot express (src/admin/sso/ applies it). */
import type { Config } from './schema.js'

/** The paths the admin listener serves for SSO besides the callback (src/admin/sso/routes.ts). */
export const SSO_LOGIN_PATH = '/console/sso/login'
export const SSO_PROVIDER_PATH = '/console/sso/provider'
/** where the callback path must live: under the console's SSO paths */
const CALLBACK_UNDER = '/console/sso/'

/** What is wrong with the `sso` section, if anything. */
export function ssoProblems (s: Config['sso']): string[] {
  const o = s.oidc
  if (o === undefined) return []
  const problems: string[] = []
  const issuer = parseUrl(o.issuer)
  if (issuer !== undefined && issuer.protocol === 'http:' && !isLoopback(issuer.hostname)) {
    problems.push('sso.oidc.issuer: must be https:// (http:// only for a provider on localhost, 127.0.0.1 or [::1])')
  }
  const redirect = parseUrl(o.redirect_uri)
  if (redirect !== undefined) {
    if (redirect.protocol === 'http:' && !isLoopback(redirect.hostname)) {
      problems.push(
        'sso.oidc.redirect_uri: must be https:// (http:// only on localhost, 127.0.0.1 or [::1]), ' +
        'or the session cookie would travel in clear'
      )
    }
    const path = redirect.pathname
    if (
      !path.startsWith(CALLBACK_UNDER) || path === CALLBACK_UNDER ||
      path === SSO_LOGIN_PATH || path === SSO_PROVIDER_PATH
    ) {
      problems.push(
        `sso.oidc.redirect_uri: its path must be under ${CALLBACK_UNDER} and be neither ${SSO_LOGIN_PATH} ` +
        `nor ${SSO_PROVIDER_PATH}, like ${CALLBACK_UNDER}callback; got ${path}`
      )
    }
  }
  const scopes = o.scopes.split(' ')
  if (!scopes.includes('openid')) problems.push('sso.oidc.scopes: must include openid')
  if (o.match === 'email' && !scopes.includes('email')) {
    problems.push('sso.oidc.scopes: must include email when sso.oidc.match is email')
  }
  return problems
}

function parseUrl (text: string): URL | undefined {
  try {
    return new URL(text)
  } catch {
    return undefined
  }
}

export function isLoopback (hostname: string): boolean {
  return hostname === 'localhost' || hostname === '[::1]' || /^127\.[0-9]+\.[0-9]+\.[0-9]+$/.test(hostname)
}
