/**
 * Every error the gateway itself produces, in one catalogue (docs/errors.md).
 * Clients see one uniform body per status; the precise reason goes to the log line.
 * docs/errors.md is kept in step with this table by test/unit/errors-doc.test.ts.
 */
import type { FastifyReply } from 'fastify'

export const ERRORS = {
  bad_request: { status: 400, message: 'Malformed request' },
  unauthorized: { status: 401, message: 'Invalid or missing authentication key' },
  forbidden: { status: 403, message: 'Insufficient permissions for this resource' },
  not_found: { status: 404, message: 'Resource not found' },
  conflict: { status: 409, message: 'Request conflicts with the current state of the registry' },
  request_timeout: { status: 408, message: 'Request timed out' },
  payload_too_large: { status: 413, message: 'Request body too large' },
  expectation_failed: { status: 417, message: 'Expectation not supported' },
  header_too_large: { status: 431, message: 'Request headers too large' },
  rate_limited: { status: 429, message: 'Too many requests' },
  quota_exceeded: { status: 429, message: 'Quota exceeded' },
  internal_error: { status: 500, message: 'Internal gateway error' },
  bad_gateway: { status: 502, message: 'Upstream service unavailable' },
  service_unavailable: { status: 503, message: 'Authentication service unavailable' },
  gateway_timeout: { status: 504, message: 'Upstream service timed out' }
} as const

export type ErrorCode = keyof typeof ERRORS

/**
 * The decision vocabulary: logged and counted (the metrics' `reason` label), never sent
 * to the client. docs/errors.md describes each.
 */
export const REASONS = [
  'allowed',
  'missing_credential', 'malformed_credential', 'bad_checksum',
  'unknown_key', 'secret_mismatch', 'key_revoked', 'key_expired',
  'user_missing', 'user_deactivated', 'org_mismatch',
  'address_not_allowed', 'no_rule', 'missing_permission',
  'registry_unavailable', 'registry_busy', 'bad_path', 'no_route',
  'upstream_error', 'upstream_timeout', 'rate_limited',
  // the gateway's own edge cases
  'invalid_record', 'bad_request', 'body_too_large', 'header_too_large',
  'expectation_failed', 'request_timeout', 'internal_error',
  'cors_preflight', 'cors_refused', 'unknown_key_limited',
  'rate_limit_unavailable',
  // quotas and credits (docs/quotas.md): not enough left; Redis unreachable under quota.on_error deny
  'quota_exceeded', 'quota_unavailable',
  // routes (docs/routing.md): a public rule passed without a key; the key in two places at once
  'public', 'two_credentials',
  // the authorizer listener: a decision request from a peer not in authz.trusted_peers
  'untrusted_peer',
  // WebSocket upgrades (src/websocket/): not a WebSocket handshake; over a connection cap
  'bad_upgrade', 'websocket_limit', 'websocket_key_limit',
  // the admin API with an SSO session (src/admin/sso/): the cookie names no session;
  // a state-changing call without `X-Requested-With: keygate`; the session cookie sent twice
  'unknown_session', 'csrf_header_missing', 'two_session_cookies',
  // anyone's leak report (src/data-plane/leak-reports.ts): accepted; past the per-address limit
  'leak_report', 'leak_report_limited',
  // a test key on a route without a test_upstream (src/decision/stages/environment.ts)
  'test_key_not_allowed',
  // a BOT key naming an identity whose record does not exist (docs/identities.md)
  'identity_missing'
] as const

export type Reason = typeof REASONS[number]

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8'

/** Bodies are immutable per code, so they are serialised once. */
const BODIES = Object.fromEntries(
  Object.entries(ERRORS).map(([code, e]) => [
    code,
    JSON.stringify({ error: { code, message: e.message, status: e.status } })
  ])
) as Record<ErrorCode, string>

export function errorBody (code: ErrorCode): string {
  return BODIES[code]
}

/** Sends the catalogue's error for `code` (both planes; the data plane's deny() adds reason and challenge). */
export function sendError (reply: FastifyReply, code: ErrorCode): FastifyReply {
  return reply.code(ERRORS[code].status)
    .header('content-type', JSON_CONTENT_TYPE)
    .header('x-request-id', reply.request.id)
    .send(BODIES[code])
}

/** Which error code a status maps to, for errors raised by fastify itself. */
export function codeForStatus (status: number): ErrorCode {
  switch (status) {
    case 401: return 'unauthorized'
    case 403: return 'forbidden'
    case 404: return 'not_found'
    case 408: return 'request_timeout'
    case 409: return 'conflict'
    case 413: return 'payload_too_large'
    case 417: return 'expectation_failed'
    case 414: return 'bad_request'
    case 431: return 'header_too_large'
    case 429: return 'rate_limited'
    case 502: return 'bad_gateway'
    case 503: return 'service_unavailable'
    case 504: return 'gateway_timeout'
    default: return status >= 400 && status < 500 ? 'bad_request' : 'internal_error'
  }
}
