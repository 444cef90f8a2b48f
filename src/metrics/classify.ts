/**
 * Error kinds for metric labels: a few fixed words, never an error message or an
 * address. Pure functions over the errors undici and ioredis raise.
 */

export const UPSTREAM_ERROR_KINDS = ['refused', 'reset', 'timeout', 'no_target', 'other'] as const
export type UpstreamErrorKind = typeof UPSTREAM_ERROR_KINDS[number]

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT',
  'FST_REPLY_FROM_TIMEOUT', 'FST_REPLY_FROM_GATEWAY_TIMEOUT', 'FST_REPLY_FROM_HTTP_REQUEST_TIMEOUT'
])
const RESET_CODES = new Set(['ECONNRESET', 'UND_ERR_SOCKET', 'EPIPE', 'ECONNABORTED'])

interface Coded { code?: unknown, statusCode?: unknown, cause?: unknown, errors?: unknown }

/** The error codes along an error's `cause` chain and inside an AggregateError. */
function codesOf (err: unknown, into: string[] = [], depth = 0): string[] {
  if (typeof err !== 'object' || err === null || depth > 4) return into
  const e = err as Coded
  if (typeof e.code === 'string') into.push(e.code)
  codesOf(e.cause, into, depth + 1)
  if (Array.isArray(e.errors)) for (const inner of e.errors) codesOf(inner, into, depth + 1)
  return into
}

/**
 * refused: nothing listens (ECONNREFUSED); reset: the connection broke before a
 * response (ECONNRESET, undici's "other side closed"); timeout: connect or response
 * headers later than the upstream's timeout (the 504s); no_target: an upstream with
 * targets had none up, so nothing was sent; other: anything else (a host that does not
 * resolve, TLS, an invalid response).
 */
export function upstreamErrorKind (err: unknown): UpstreamErrorKind {
  const codes = codesOf(err)
  if (codes.includes('KEYGATE_NO_HEALTHY_TARGET')) return 'no_target'
  if ((err as Coded | null)?.statusCode === 504 || codes.some((c) => TIMEOUT_CODES.has(c))) return 'timeout'
  if (codes.includes('ECONNREFUSED')) return 'refused'
  if (codes.some((c) => RESET_CODES.has(c))) return 'reset'
  return 'other'
}

export const REDIS_LOOKUP_ERROR_KINDS = ['timeout', 'connection', 'reply'] as const
export type RedisLookupErrorKind = typeof REDIS_LOOKUP_ERROR_KINDS[number]

/**
 * timeout: no answer within `redis.command_timeout_ms`; reply: Redis answered with an
 * error (e.g. WRONGTYPE for a record written with SET); connection: the command could
 * not be sent, or its connection was lost (no offline queue, no retry: fail fast).
 */
export function redisLookupErrorKind (err: unknown): RedisLookupErrorKind {
  if (!(err instanceof Error)) return 'connection'
  if (err.message === 'Command timed out') return 'timeout'
  if (err.name === 'ReplyError') return 'reply'
  return 'connection'
}
