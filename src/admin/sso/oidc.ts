/**
 * The OpenID Connect relying party, with openid-client (panva's, certified): nothing
 * of the protocol is written here. Discovery (`<issuer>/.well-known/openid-configuration`,
 * read on first use and again after a failure), the authorization code flow with PKCE
 * (`S256`), `state` and `nonce`; at the callback openid-client checks the response's
 * `state` (and `iss` when sent), redeems the code with the PKCE verifier, and verifies
 * the ID token: its signature with the provider's JWK Set (`enableNonRepudiationChecks`:
 * by default openid-client trusts a token endpoint's TLS instead), `iss`, `aud`, `exp`,
 * `iat` and `nonce`. A provider at an http:// issuer is allowed only on a loopback address
 * (the configuration check refuses any other: src/config/sso.ts), for the demo and tests.
 */
import * as oidc from 'openid-client'
import type { OidcConfig } from '../../config/schema.js'
import type { PendingLogin } from './sessions.js'

/** The ID token's claims, verified. */
export interface Claims {
  sub: string
  email?: unknown
  email_verified?: unknown
  [claim: string]: unknown
}

export interface OidcFlow {
  /** Where to send the browser, and what the callback must be checked against. */
  begin: () => Promise<{ url: URL, pending: PendingLogin }>
  /** The callback's query checked and its code redeemed: the ID token's verified claims. Throws on any failure. */
  finish: (query: string, pending: PendingLogin) => Promise<Claims>
}

export function createOidcFlow (c: OidcConfig): OidcFlow {
  let discovered: Promise<oidc.Configuration> | undefined
  const configuration = async (): Promise<oidc.Configuration> => {
    discovered ??= oidc.discovery(
      new URL(c.issuer),
      c.client_id,
      c.client_secret,
      c.client_secret === undefined ? oidc.None() : undefined,
      // the ID token's signature is checked against the JWK Set even though it came
      // straight from the token endpoint (openid-client would otherwise rely on TLS alone)
      {
        execute: new URL(c.issuer).protocol === 'http:'
          ? [oidc.enableNonRepudiationChecks, oidc.allowInsecureRequests]
          : [oidc.enableNonRepudiationChecks]
      }
    )
    try {
      return await discovered
    } catch (err: unknown) {
      // (a provider that was down is asked again at the next sign-in)
      discovered = undefined
      throw err
    }
  }

  return {
    async begin () {
      const config = await configuration()
      const pending: PendingLogin = {
        state: oidc.randomState(), nonce: oidc.randomNonce(), verifier: oidc.randomPKCECodeVerifier()
      }
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: c.redirect_uri,
        scope: c.scopes,
        code_challenge: await oidc.calculatePKCECodeChallenge(pending.verifier),
        code_challenge_method: 'S256',
        state: pending.state,
        nonce: pending.nonce
      })
      return { url, pending }
    },

    async finish (query, pending) {
      const config = await configuration()
      // the callback as registered (not as this request's Host names it), with the provider's answer
      const current = new URL(c.redirect_uri)
      current.search = query
      const tokens = await oidc.authorizationCodeGrant(config, current, {
        pkceCodeVerifier: pending.verifier,
        expectedState: pending.state,
        expectedNonce: pending.nonce,
        idTokenExpected: true
      })
      const claims = tokens.claims()
      if (claims === undefined) throw new Error('the provider sent no ID token')
      return claims as Claims
    }
  }
}
