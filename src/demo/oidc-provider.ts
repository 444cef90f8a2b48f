/**
 * A local OpenID provider for the demo and the tests: panva's `oidc-provider` (a dev
 * dependency: the demo runs from a clone, where dev dependencies are installed, and
 * the gateway itself never loads this module). Its own login page (`devInteractions`)
 * takes a login name, which is the account's `sub`, and any password; consent is given
 * for the registered clients without asking. Any login name is an account (one not
 * listed has only its `sub`): whether it may sign in is keygate's to decide, and the
 * console shows keygate's refusal rather than the provider's error page. The ID token carries the scope's claims
 * (`email`, `email_verified`, `name`), as the common providers' do.
 */
import type { Server } from 'node:http'
import { exportJWK, generateKeyPair } from 'jose'
import Provider, { type Configuration } from 'oidc-provider'

export interface DemoAccount {
  email?: string
  email_verified?: boolean
  name?: string
}

export interface DemoClient {
  client_id: string
  /** absent: a public client (PKCE alone) */
  client_secret?: string
  redirect_uris: string[]
}

export interface DemoProvider {
  issuer: string
  provider: Provider
  close: () => Promise<void>
}

export async function startDemoProvider (
  o: { port: number, clients: DemoClient[], accounts: Record<string, DemoAccount> }
): Promise<DemoProvider> {
  const issuer = `http://127.0.0.1:${o.port}`
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const jwk = { ...await exportJWK(privateKey), kid: 'demo', alg: 'RS256', use: 'sig' }
  const configuration: Configuration = {
    clients: o.clients.map((c) => ({
      client_id: c.client_id,
      ...(c.client_secret === undefined
        ? { token_endpoint_auth_method: 'none' }
        : { client_secret: c.client_secret, token_endpoint_auth_method: 'client_secret_post' }),
      redirect_uris: c.redirect_uris,
      grant_types: ['authorization_code'],
      response_types: ['code']
    })),
    jwks: { keys: [jwk as never] },
    cookies: { keys: [Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64url')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    features: { devInteractions: { enabled: true } },
    async findAccount (_ctx, sub) {
      const account = o.accounts[sub] ?? {}
      return { accountId: sub, claims: () => ({ sub, ...account }) }
    },
    // first-party clients: consent is given without a page
    async loadExistingGrant (ctx) {
      const { client, session } = ctx.oidc
      if (client === undefined || session?.accountId === undefined) return undefined
      const grant = new ctx.oidc.provider.Grant({ clientId: client.clientId, accountId: session.accountId })
      grant.addOIDCScope('openid email profile')
      await grant.save()
      return grant
    }
  }
  const provider = new Provider(issuer, configuration)
  const server: Server = await new Promise((resolve) => {
    const s = provider.listen(o.port, '127.0.0.1', () => resolve(s))
  })
  return {
    issuer,
    provider,
    close: async () => await new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
}
