// The admin API client. The credential lives in this module's closure only: never in
// localStorage, sessionStorage, a cookie, the URL or the DOM. Signing out (or a
// reload) forgets it.

const BASE = new URL('../admin/v1/', document.baseURI)

let credential = null

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
  try {
    return await request('GET', 'session')
  } catch (err) {
    credential = null
    throw err
  }
}

export function signOut () {
  credential = null
}

export async function request (method, path, body) {
  if (credential === null) throw new ApiError(401, 'unauthorized', 'Not signed in')
  const headers = { authorization: `Bearer ${credential}`, accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  let res
  try {
    res = await fetch(new URL(path, BASE), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
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
  users: (filter = {}) => request('GET', 'users' + query(filter)),
  setUserStatus: (id, active) => request('POST', `users/${enc(id)}/${active ? 'activate' : 'deactivate'}`, {}),
  roles: () => request('GET', 'roles'),
  putRole: (name, permissions, description, rateLimit) => request('PUT', `roles/${enc(name)}`, {
    permissions,
    ...(description === undefined ? {} : { description }),
    ...(rateLimit === undefined ? {} : { rate_limit: rateLimit })
  }),
  setKeyLimit: (id, rateLimit) => request('POST', `keys/${enc(id)}/limit`, { rate_limit: rateLimit }),
  orgs: () => request('GET', 'orgs'),
  keyUsage: (id, range = {}) => request('GET', `keys/${enc(id)}/usage` + query(range)),
  orgUsage: (org, range = {}) => request('GET', `orgs/${enc(org)}/usage` + query(range)),
  putOrg: (org, input) => request('PUT', `orgs/${enc(org)}`, input),
  deleteRole: (name, force) => request('DELETE', `roles/${enc(name)}` + (force ? '?force=true' : ''))
}

function query (filter) {
  const entries = Object.entries(filter).filter(([, v]) => v !== undefined && v !== '')
  return entries.length === 0 ? '' : '?' + new URLSearchParams(entries).toString()
}
