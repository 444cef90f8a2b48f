/**
 * The environment's part of the configuration (docs/configuration.md): the variables
 * that override fields, and the secrets (the admin token, the OIDC client secret) that
 * only ever come from the environment, never from the file.
 */
import { KEY_FILE_ENV } from './assertion-key-files.js'

/** Environment overrides (docs/configuration.md). Secrets never come from the file. */
export function applyEnv (raw: Record<string, unknown>, env: NodeJS.ProcessEnv): Record<string, unknown> {
  const section = (name: string): Record<string, unknown> => {
    const s = raw[name]
    if (typeof s === 'object' && s !== null && !Array.isArray(s)) return s as Record<string, unknown>
    const fresh: Record<string, unknown> = {}
    raw[name] = fresh
    return fresh
  }
  if (env.KEYGATE_REDIS_URL !== undefined && env.KEYGATE_REDIS_URL !== '') section('redis').url = env.KEYGATE_REDIS_URL
  if (env.KEYGATE_LISTEN !== undefined && env.KEYGATE_LISTEN !== '') raw.listen = env.KEYGATE_LISTEN
  if (hasValue(env.KEYGATE_ADMIN_LISTEN)) raw.admin_listen = env.KEYGATE_ADMIN_LISTEN
  if (hasValue(env.KEYGATE_AUTHZ_LISTEN)) raw.authz_listen = env.KEYGATE_AUTHZ_LISTEN
  if (hasValue(env.KEYGATE_AUTHZ_GRPC_LISTEN)) raw.authz_grpc_listen = env.KEYGATE_AUTHZ_GRPC_LISTEN
  if (hasValue(env.KEYGATE_OPS_LISTEN)) raw.ops_listen = env.KEYGATE_OPS_LISTEN
  if (hasValue(env.KEYGATE_TRACING_OTLP_ENDPOINT)) section('tracing').otlp_endpoint = env.KEYGATE_TRACING_OTLP_ENDPOINT
  // (a value that is not a number stays a string, for the schema to name)
  if (hasValue(env.KEYGATE_TRACING_SAMPLE_RATIO)) {
    section('tracing').sample_ratio = numberOrText(env.KEYGATE_TRACING_SAMPLE_RATIO)
  }
  if (hasValue(env.KEYGATE_TRACING_SERVICE_NAME)) section('tracing').service_name = env.KEYGATE_TRACING_SERVICE_NAME
  if (hasValue(env.KEYGATE_TRACING_PROTOCOL)) section('tracing').protocol = env.KEYGATE_TRACING_PROTOCOL
  // a path, not a secret: the field may name it too, the variable wins
  if (hasValue(env[KEY_FILE_ENV])) subsection(section('identity'), 'assertion').key_file = env[KEY_FILE_ENV]
  // The admin token: only ever from the environment (a file's value is refused by
  // fileOnlyProblems and dropped here, so it is never validated, echoed or used).
  delete raw.admin_token
  const token = env.KEYGATE_ADMIN_TOKEN
  if (token !== undefined && token !== '' && ADMIN_TOKEN.test(token)) raw.admin_token = token
  // The OIDC client secret: likewise, and only where there is an `sso.oidc` to use it.
  const sso = raw.sso
  const oidc = typeof sso === 'object' && sso !== null ? (sso as Record<string, unknown>).oidc : undefined
  if (typeof oidc === 'object' && oidc !== null && !Array.isArray(oidc)) {
    delete (oidc as Record<string, unknown>).client_secret
    if (hasValue(env[OIDC_SECRET_ENV])) (oidc as Record<string, unknown>).client_secret = env[OIDC_SECRET_ENV]
  }
  return raw
}

function numberOrText (v: string): number | string {
  const n = Number(v)
  return v.trim() !== '' && Number.isFinite(n) ? n : v
}

export function hasValue (v: string | undefined): v is string {
  return v !== undefined && v !== ''
}

/** `parent[name]` as a mapping, made one when it is absent or not a mapping. */
function subsection (parent: Record<string, unknown>, name: string): Record<string, unknown> {
  const s = parent[name]
  if (typeof s === 'object' && s !== null && !Array.isArray(s)) return s as Record<string, unknown>
  const fresh: Record<string, unknown> = {}
  parent[name] = fresh
  return fresh
}

export const OIDC_SECRET_ENV = 'KEYGATE_OIDC_CLIENT_SECRET'

/** A Bearer token68 (RFC 6750) of at least 16 characters, e.g. `openssl rand -hex 32`. */
const ADMIN_TOKEN = /^[A-Za-z0-9\-._~+/]{16,}=*$/

/** Problems with environment values that the schema cannot name without echoing a secret. */
export function envProblems (env: NodeJS.ProcessEnv): string[] {
  const token = env.KEYGATE_ADMIN_TOKEN
  if (token !== undefined && token !== '' && !ADMIN_TOKEN.test(token)) {
    return ['KEYGATE_ADMIN_TOKEN: must be at least 16 characters of A-Z a-z 0-9 - . _ ~ + / ' +
      '(optionally ending in =), as it is sent as `Authorization: Bearer <token>`; e.g. `openssl rand -hex 32`']
  }
  return []
}
