/**
 * @keygate/client: keygate's admin API with types generated from its OpenAPI document
 * (admin-api.ts, by openapi-typescript; called through openapi-fetch), `verify()` against
 * the verify API on the authorizer listener, and the calls a key makes about itself on
 * the data plane. docs/verify.md and docs/self-service.md describe the answers.
 */
import createClient, { type Client } from 'openapi-fetch'
import type { components, paths } from './admin-api.js'

export type { components, paths }
export type AdminClient = Client<paths>

export interface KeygateClientOptions {
  /** the admin listener, like http://127.0.0.1:8081 (for `admin`) */
  adminUrl?: string
  /** the admin token, or a key whose role grants an admin scope */
  adminCredential?: string
  /** the authorizer listener, like http://127.0.0.1:8082 (for `verify`) */
  authzUrl?: string
  /** a key granted `keygate:keys:verify`, the verify API's caller */
  verifyKey?: string
  /** the data plane, like https://gateway.example.com (for `self`) */
  gatewayUrl?: string
  /** `self_service.prefix` (default `/_keygate/v1`) */
  selfServicePrefix?: string
  /** another fetch (tests, proxies); default: the global one */
  fetch?: typeof fetch
}

export interface VerifyOptions {
  /** every one must be granted (`resource:action`) */
  permissions?: string[]
  /** units of quota and credits needed and spent; none: nothing needed or spent (a metered key's quota is read) */
  cost?: number
}

export type VerifyAnswer =
  | {
    valid: true
    key_id: string
    type: 'personal' | 'bot'
    org: string
    user?: string
    role: string
    /** a BOT key of an identity (docs/identities.md): its id and the customer's external id */
    identity?: { id: string, external_id: string }
    /** the effective permissions: the role's, narrowed by the key's scope */
    permissions: string[]
    /** the key's `meta` fields over its identity's, as the upstream receives them in X-Auth-Meta */
    meta?: Record<string, unknown>
    expires_at?: string
    /** a metered key: the allowance with the fewest units left (after `cost`); `reset_s` null for credits */
    quota?: { remaining: number, reset_s: number | null }
  }
  | { valid: false, code: 'unauthorized' | 'forbidden' | 'address_not_allowed' | 'rate_limited' | 'quota_exceeded' }

export interface UsagePoint { t: string, allowed: number, refused: number, limited: number, errors: number }

export interface SelfView {
  id: string
  type: 'personal' | 'bot'
  org: string
  user?: string
  role: string
  scope?: string[]
  permissions: string[]
  expires_at?: string
  rate_limit: { limit: number, remaining: number, reset_s: number } | null
  quota: unknown
}

/** A key's calls about itself (docs/self-service.md). */
export interface SelfService {
  whoami: () => Promise<SelfView>
  usage: () => Promise<UsagePoint[]>
  revoke: () => Promise<void>
  /** the new key, shown once; the old one keeps working for `grace` (like `24h`) */
  rotate: (grace?: string) => Promise<RotatedKey>
}

export interface RotatedKey { id: string, key: string, replaces: string, replaces_expires_at: string, [field: string]: unknown }

/** keygate's error object: its status, code and (for a refused request body) details. */
export class KeygateError extends Error {
  override readonly name = 'KeygateError'
  constructor (
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Array<{ field?: string, reason: string }>
  ) {
    super(message)
  }
}

export class KeygateClient {
  /** the admin API, typed path by path: `await keygate.admin.POST('/admin/v1/keys', { body })` */
  readonly admin: AdminClient
  private readonly fetch: typeof fetch

  constructor (private readonly o: KeygateClientOptions) {
    this.fetch = o.fetch ?? globalThis.fetch
    const headers: Record<string, string> = {}
    if (o.adminCredential !== undefined) headers.authorization = `Bearer ${o.adminCredential}`
    this.admin = createClient<paths>({ baseUrl: o.adminUrl ?? 'http://127.0.0.1:8081', headers, fetch: this.fetch })
  }

  /** Whether `key` is valid and may do `permissions` (docs/verify.md); throws KeygateError for a refused caller. */
  async verify (key: string, opts: VerifyOptions = {}): Promise<VerifyAnswer> {
    if (this.o.authzUrl === undefined || this.o.verifyKey === undefined) {
      throw new TypeError('verify() needs authzUrl and verifyKey')
    }
    const body: Record<string, unknown> = { key }
    if (opts.permissions !== undefined) body.permissions = opts.permissions
    if (opts.cost !== undefined) body.cost = opts.cost
    return await this.call<VerifyAnswer>(`${this.o.authzUrl}/v1/verify`, 'POST', this.o.verifyKey, body)
  }

  /** The calls `key` makes about itself on the data plane (docs/self-service.md). */
  self (key: string): SelfService {
    if (this.o.gatewayUrl === undefined) throw new TypeError('self() needs gatewayUrl')
    const base = `${this.o.gatewayUrl}${this.o.selfServicePrefix ?? '/_keygate/v1'}/key`
    return {
      whoami: async () => await this.call<SelfView>(base, 'GET', key),
      usage: async () => (await this.call<{ points: UsagePoint[] }>(`${base}/usage`, 'GET', key)).points,
      revoke: async () => { await this.call(`${base}/revoke`, 'POST', key) },
      rotate: async (grace?: string) =>
        await this.call<RotatedKey>(`${base}/rotate`, 'POST', key, grace === undefined ? undefined : { grace })
    }
  }

  private async call<T> (url: string, method: string, credential: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { authorization: `Bearer ${credential}` }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await this.fetch(url, {
      method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) })
    })
    const text = await res.text()
    const value = text === '' ? undefined : JSON.parse(text) as unknown
    if (!res.ok) {
      const e = (value as { error?: { code?: string, message?: string, details?: KeygateError['details'] } })?.error
      throw new KeygateError(res.status, e?.code ?? 'unknown', e?.message ?? `HTTP ${res.status}`, e?.details)
    }
    return value as T
  }
}
