/**
 * The headers stage: the headers sent upstream. Strip, then set: every client header that
 * could impersonate an identity or steer the upstream is dropped in every spelling
 * (case-insensitive, `_` read as `-`), then the identity headers are set from the
 * resolved identity. The sets of names are built once, at start-up.
 *
 * The names `Connection` lists are removed before this runs (withoutConnectionListed,
 * called by the proxy and the WebSocket upgrade), so a client cannot use them to drop
 * what is set here, nor have the upstream read a header meant for one hop.
 */
import type { FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { Assertions } from '../assertion/assertions.js'
import { assertionHeaderName } from '../assertion/claims.js'
import type { Identity } from '../decision/identity.js'
import { connectionPeer } from './peers.js'
import type { RequestState } from './request-state.js'

export interface HeaderPolicy {
  /** identity header prefix, e.g. `X-Auth-` */
  prefix: string
  forwardAuthorization: boolean
  /** identity.drop_headers: never forwarded, from any peer */
  dropHeaders?: readonly string[]
  /** the route's `key_header`: the key may travel in it, so it is never forwarded */
  keyHeader?: string | undefined
  trustedProxies: readonly string[]
  /** the signed identity assertion (`<prefix>Assertion`), when on */
  assertions?: Assertions | undefined
}

/** Hop-by-hop headers (RFC 9110 section 7.6.1): they describe one connection, so neither direction forwards them. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'
])

const ALWAYS_STRIPPED = [
  ...HOP_BY_HOP,
  'proxy-authorization',
  'x-http-method-override', 'x-http-method', 'x-method-override',
  'x-request-id',
  // the upstream's Host is its origin's, which undici writes itself (from the upstream's
  // url or target); a Host on the request would also become the TLS server name (SNI)
  // in undici, in place of the configured `servername`
  'host',
  // the trace context is the gateway's: the client's is continued by src/tracing/
  'traceparent', 'tracestate',
  // the gateway answers `100-continue` itself, after the gate; undici refuses to send it on
  'expect'
]
/**
 * Kept only from a trusted proxy: the forwarding headers, and those an upstream
 * framework or proxy may read to re-route the request or to decide who the client is.
 */
const FORWARDING = [
  'forwarded', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port',
  'x-original-url', 'x-rewrite-url', 'x-original-uri', 'x-original-method',
  'x-forwarded-uri', 'x-forwarded-method', 'x-forwarded-prefix', 'x-forwarded-scheme', 'x-forwarded-ssl',
  'front-end-https',
  'x-real-ip', 'true-client-ip', 'x-client-ip', 'x-cluster-client-ip', 'cf-connecting-ip', 'fastly-client-ip'
]

/**
 * A name made of digits is an integer-like property key, which a JS object lists
 * before every other: it would come ahead of the identity headers upstream.
 */
const DIGITS = /^[0-9]+$/

/** What the rewriter reads of a request: a fastify request, or a WebSocket's upgrade request (src/websocket/). */
export type ForwardedRequest = Pick<FastifyRequest, 'id' | 'method' | 'raw' | 'protocol' | 'headers'> & {
  kg: RequestState
}

export type RequestHeaderRewriter = (request: ForwardedRequest, headers: IncomingHttpHeaders) => IncomingHttpHeaders

/** What happens to a client's request header: kept, dropped, or kept only from a trusted proxy. */
const KEEP = 0
const DROP = 1
const FORWARDING_HEADER = 2
type Verdict = typeof KEEP | typeof DROP | typeof FORWARDING_HEADER

/** Distinct header names whose verdict is remembered (a client can send any names). */
const VERDICTS_REMEMBERED = 1024

/**
 * The client's request headers, as the header rewriter starts from them (the data
 * plane's proxy and the WebSocket upgrade alike): without the names `Connection` lists (so a client cannot make
 * the gateway drop
 * a header it sets). The rewriter drops `Connection` itself, and copies what it keeps
 * into a new object: when `Connection` lists no other header (none, `keep-alive`,
 * `close`), the client's own object is read as it is, never written.
 */
export function withoutConnectionListed (headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const connection = headers.connection
  if (connection === undefined || connection === 'keep-alive' || connection === 'close') return headers
  const out: IncomingHttpHeaders = { ...headers }
  for (const name of connection.toLowerCase().split(',')) {
    const trimmed = name.trim()
    if (trimmed !== '') out[trimmed] = undefined
  }
  return out
}

export function createHeaderRewriter (policy: HeaderPolicy): RequestHeaderRewriter {
  const prefix = policy.prefix.toLowerCase()
  const names = identityHeaderNames(prefix)
  const stripped = new Set(ALWAYS_STRIPPED)
  if (!policy.forwardAuthorization) stripped.add('authorization')
  for (const name of [...policy.dropHeaders ?? [], ...policy.keyHeader === undefined ? [] : [policy.keyHeader]]) {
    stripped.add(name.toLowerCase().replace(/_/g, '-'))
  }
  const forwarding = new Set(FORWARDING)
  const peerOf = connectionPeer(policy.trustedProxies)
  const assertions = policy.assertions

  // A name's verdict never changes, so it is worked out once per name.
  const verdicts = new Map<string, Verdict>()
  function verdictOf (name: string): Verdict {
    let verdict = verdicts.get(name)
    if (verdict !== undefined) return verdict
    const canonical = name.includes('_') ? name.replace(/_/g, '-') : name
    if (stripped.has(name) || stripped.has(canonical) || canonical.startsWith(prefix) || DIGITS.test(name)) {
      verdict = DROP
    } else if (forwarding.has(name)) {
      verdict = FORWARDING_HEADER
    } else if (forwarding.has(canonical)) {
      verdict = DROP
    } else {
      verdict = KEEP
    }
    if (verdicts.size < VERDICTS_REMEMBERED) verdicts.set(name, verdict)
    return verdict
  }

  return function rewriteRequestHeaders (request, headers) {
    const { peer, trusted } = peerOf(request.raw.socket)
    // the gateway's own headers first: an upstream that keeps only the start of a long
    // header block still has them (a client's copies are all dropped below)
    const out: IncomingHttpHeaders = {}
    const id = request.kg.identity
    if (id !== undefined) {
      setIdentity(out, names, id)
      // bound to what is forwarded: the method, the path (no query), the request id
      if (assertions !== undefined) {
        out[names.assertion] = assertions.forRequest(
          id,
          request.method,
          request.kg.forwardPath ?? request.kg.path,
          request.id,
          Date.now()
        )
      }
    } else if (request.kg.anonymous) {
      // a public rule without a key (docs/routing.md): no identity, and the upstream is told so
      out[names.anonymous] = 'true'
    }
    out['x-request-id'] = request.id
    for (const name in headers) {
      const value = headers[name]
      if (value === undefined) continue // a name `Connection` listed (withoutConnectionListed)
      const verdict = verdictOf(name)
      if (verdict === KEEP || (verdict === FORWARDING_HEADER && trusted)) out[name] = value
    }

    const priorFor = trusted ? headers['x-forwarded-for'] : undefined
    out['x-forwarded-for'] = priorFor === undefined ? peer : `${String(priorFor)}, ${peer}`
    if (!trusted || out['x-forwarded-proto'] === undefined) out['x-forwarded-proto'] = request.protocol
    if (!trusted || out['x-forwarded-host'] === undefined) out['x-forwarded-host'] = request.headers.host ?? ''
    return out
  }
}

interface IdentityHeaderNames {
  keyId: string
  keyType: string
  userId: string
  orgId: string
  role: string
  env: string
  identity: string
  meta: string
  assertion: string
  anonymous: string
}

/** The identity header names for a (lower-cased) prefix, built once. */
function identityHeaderNames (prefix: string): IdentityHeaderNames {
  return {
    keyId: prefix + 'key-id',
    keyType: prefix + 'key-type',
    userId: prefix + 'user-id',
    orgId: prefix + 'org-id',
    role: prefix + 'role',
    env: prefix + 'env',
    identity: prefix + 'identity',
    meta: prefix + 'meta',
    assertion: assertionHeaderName(prefix),
    anonymous: prefix + 'anonymous'
  }
}

/** The identity headers, set on a header object. */
function setIdentity (
  out: Record<string, string | string[] | undefined>,
  names: IdentityHeaderNames,
  id: Identity
): void {
  out[names.keyId] = id.keyId
  out[names.keyType] = id.type
  if (id.userId !== undefined) out[names.userId] = id.userId
  out[names.orgId] = id.org
  out[names.role] = id.role
  // `live` or `test` (docs/test-keys.md)
  out[names.env] = id.env === 'test' ? 'test' : 'live'
  // docs/identities.md: the identity's external id, and the meta (base64url JSON); never logged
  if (id.externalId !== undefined) out[names.identity] = id.externalId
  if (id.meta !== undefined) out[names.meta] = id.meta.header
}

/**
 * The identity headers for an identity, as the upstream receives them (for `keygate check`);
 * no identity (a public rule without a key): `<prefix>Anonymous: true` alone.
 */
export function identityHeaders (prefix: string, id: Identity | undefined, requestId: string): Record<string, string> {
  return identityHeadersFor(prefix)(id, requestId)
}

/** identityHeaders with the names built once (the authorizer's answer, per decision). */
export function identityHeadersFor (
  prefix: string
): (id: Identity | undefined, requestId: string) => Record<string, string> {
  const names = identityHeaderNames(prefix.toLowerCase())
  return (id, requestId) => {
    const out: Record<string, string> = {}
    if (id === undefined) out[names.anonymous] = 'true'
    else setIdentity(out, names, id)
    out['x-request-id'] = requestId
    return out
  }
}
