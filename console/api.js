// The admin API client. A key or token lives in this module's closure only: never in
// localStorage, sessionStorage, a cookie, the URL or the DOM. Signing out (or a
// reload) forgets it. A person signed in through SSO has instead an HttpOnly session
// cookie this script never sees; the browser sends it (same origin only), and every
// call carries `X-Requested-With: keygate`, which the API requires of a state-changing
// call made with a session (a cross-site page cannot set it).

const BASE = new URL('../admin/v1/', document.baseURI)

let credential = null
/** signed in with the session cookie (SSO) rather than a credential */
let withSession = false

export class ApiError extends Error {
  /** `details`: a refused write's problems, each `{ field, reason }` (docs/admin-api.md#errors) */
  constructor (status, code, message, details = []) {
    super(message)
    this.name = 'ApiError'
    this.status = status
    this.code = code
    this.details = details
  }
}

/** Remembers the credential for this tab, if the API accepts it; returns the session. */
export async function signIn (value) {
  credential = value
  withSession = false
  try {
    return await request('GET', 'session')
  } catch (err) {
    credential = null
    throw err
  }
}

/** The SSO session, if the browser holds one: the session, else null. */
export async function resumeSession () {
  credential = null
  withSession = true
  try {
    return await request('GET', 'session')
  } catch {
    withSession = false
    return null
  }
}

/** The SSO provider's name, if SSO is configured: else null. */
export async function ssoProvider () {
  try {
    const res = await fetch(new URL('sso/provider', document.baseURI), {
      cache: 'no-store', credentials: 'omit', redirect: 'error'
    })
    if (!res.ok) return null
    const data = await res.json()
    return typeof data?.display_name === 'string' ? data.display_name : null
  } catch {
    return null
  }
}

export function signOut () {
  credential = null
  if (withSession) {
    withSession = false
    // ends the session on every instance; the API also clears the cookie
    fetch(new URL('session', BASE), {
      method: 'DELETE', headers: { 'x-requested-with': 'keygate' }, credentials: 'same-origin', redirect: 'error'
    }).catch(() => {})
  }
}

export function signedInWithSession () {
  return withSession
}

export async function request (method, path, body) {
  if (credential === null && !withSession) throw new ApiError(401, 'unauthorized', 'Not signed in')
  const headers = { accept: 'application/json', 'x-requested-with': 'keygate' }
  if (credential !== null) headers.authorization = `Bearer ${credential}`
  if (body !== undefined) headers['content-type'] = 'application/json'
  let res
  try {
    res = await fetch(new URL(path, BASE), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'same-origin',
      redirect: 'error',
      referrerPolicy: 'no-referrer'
    })
  } catch {
    throw new ApiError(0, 'network', 'The gateway did not answer. Is the admin plane running?')
  }
  const data = await res.json().catch(() => null)
  if (!res.ok) {
    const e = data !== null && typeof data === 'object' ? data.error : undefined
    const details = Array.isArray(e?.details) ? e.details.filter((d) => typeof d?.reason === 'string') : []
    throw new ApiError(res.status, e?.code ?? 'error', e?.message ?? `Request failed (${res.status})`, details)
  }
  return data
}

const enc = encodeURIComponent

export const api = {
  permissions: () => request('GET', 'permissions'),
  keys: (filter = {}) => request('GET', 'keys' + query(filter)),
  createKey: (input) => request('POST', 'keys', input),
  revokeKey: (id) => request('POST', `keys/${enc(id)}/revoke`, {}),
  key: (id) => request('GET', `keys/${enc(id)}`),
  users: (filter = {}) => request('GET', 'users' + query(filter)),
  putUser: (id, input) => request('PUT', `users/${enc(id)}`, input),
  setUserStatus: (id, active) => request('POST', `users/${enc(id)}/${active ? 'activate' : 'deactivate'}`, {}),
  roles: () => request('GET', 'roles'),
  putRole: (name, permissions, description, rateLimit) => request('PUT', `roles/${enc(name)}`, {
    permissions,
    ...(description === undefined ? {} : { description }),
    ...(rateLimit === undefined ? {} : { rate_limit: rateLimit })
  }),
  setKeyLimit: (id, rateLimit) => request('POST', `keys/${enc(id)}/limit`, { rate_limit: rateLimit }),
  orgs: (filter = {}) => request('GET', 'orgs' + query(filter)),
  keyQuota: (id) => request('GET', `keys/${enc(id)}/quota`),
  keyUsage: (id, range = {}) => request('GET', `keys/${enc(id)}/usage` + query(range)),
  keyRequests: (id, filter = {}) => request('GET', `keys/${enc(id)}/requests` + query(filter)),
  keysUsage: (ids, range = {}) => request('GET', 'usage/keys' + query({ ids: ids.join(','), ...range })),
  orgUsage: (org, range = {}) => request('GET', `orgs/${enc(org)}/usage` + query(range)),
  putOrg: (org, input) => request('PUT', `orgs/${enc(org)}`, input),
  webhooks: () => request('GET', 'webhooks'),
  addWebhook: (input) => request('POST', 'webhooks', input),
  removeWebhook: (id) => request('DELETE', `webhooks/${enc(id)}`),
  testWebhook: (id) => request('POST', `webhooks/${enc(id)}/test`),
  webhookDeliveries: (id) => request('GET', `webhooks/${enc(id)}/deliveries`),
  resendDelivery: (id, delivery) => request('POST', `webhooks/${enc(id)}/deliveries/${enc(delivery)}/resend`),
  deleteRole: (name, force) => request('DELETE', `roles/${enc(name)}` + (force ? '?force=true' : '')),
  identities: (filter = {}) => request('GET', 'identities' + query(filter)),
  identity: (id) => request('GET', `identities/${enc(id)}`),
  identityKeys: (id) => request('GET', `identities/${enc(id)}/keys`),
  identityUsage: (id, range = {}) => request('GET', `identities/${enc(id)}/usage` + query(range)),
  putIdentity: (id, input) => request('PUT', `identities/${enc(id)}`, input),
  meterIdentity: (id, input) => request('POST', `identities/${enc(id)}/quota`, input),
  deleteIdentity: (id, force) => request('DELETE', `identities/${enc(id)}` + (force ? '?force=true' : ''))
}

function query (filter) {
  const entries = Object.entries(filter).filter(([, v]) => v !== undefined && v !== '')
  return entries.length === 0 ? '' : '?' + new URLSearchParams(entries).toString()
}
