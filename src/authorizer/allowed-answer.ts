/**
 * The authorizer's allowed answer, written once for every authorizer front end (the
 * HTTP listener, authorizer-plane.ts; a gRPC ext_authz server maps the same answer to
 * its CheckResponse): status 200; the headers the proxy forwards upstream (the identity
 * headers, the request id, the trace context whose parent is the decision, and the
 * assertion when `identity.assertion` is on); and the request headers the proxy removes
 * (Envoy: the key, in `Authorization` and in the route's key header, and a client's own
 * copy of each identity header this answer does not set). An anonymous answer (a public
 * rule, no key: docs/routing.md) sets `<prefix>Anonymous: true` and no identity header,
 * so every one is removed. Protocol-neutral: no HTTP library.
 */
import { assertionHeaderName, type Assertions } from '../assertion/index.js'
import type { Identity } from '../decision/identity.js'
import { identityHeadersFor } from '../http/identity-headers.js'
import type { RequestTrace, Tracing } from '../tracing/request-trace.js'

/** The request headers the proxy removes: their names, and as one comma-separated value. */
export interface Removal {
  readonly names: readonly string[]
  /** Envoy's `x-envoy-auth-headers-to-remove` value */
  readonly list: string
}

export interface AllowedAnswer {
  readonly status: 200
  /** lower-case names; the proxy forwards each to the upstream */
  readonly headers: Record<string, string>
  readonly remove: Removal
}

export interface AllowedAnswerOptions {
  /** `identity.header_prefix` */
  headerPrefix: string
  assertions: Assertions | undefined
  tracing: Tracing
}

/**
 * `method` and `target`: the original request's, as the proxy named them. The
 * assertion's `htu` is that target's path: the path the proxy forwards, which differs
 * from the decided one only by percent-encoded unreserved characters.
 */
export type WriteAllowed = (
  identity: Identity | undefined, requestId: string, trace: RequestTrace, method: string, target: string, now: number,
  keyHeader?: string
) => AllowedAnswer

export function allowedAnswer ({ headerPrefix, assertions, tracing }: AllowedAnswerOptions): WriteAllowed {
  const identityHeaders = identityHeadersFor(headerPrefix)
  const assertionHeader = assertionHeaderName(headerPrefix).toLowerCase()
  const notSet = ['authorization', ...(assertions === undefined ? [assertionHeader] : [])]
  const removal = (names: string[]): Removal => Object.freeze({ names: Object.freeze(names), list: names.join(',') })
  const prefix = headerPrefix.toLowerCase()
  // by what an identity leaves unset: bit 1 no user, bit 2 no identity (docs/identities.md), bit 4 no meta
  const unset: Removal[] = []
  for (let bits = 0; bits < 8; bits++) {
    unset.push(removal([
      ...notSet,
      ...(bits & 1) === 0 ? [] : [prefix + 'user-id'],
      ...(bits & 2) === 0 ? [] : [prefix + 'identity'],
      ...(bits & 4) === 0 ? [] : [prefix + 'meta']
    ]))
  }
  const anonymous = removal([
    'authorization',
    assertionHeader,
    ...['key-id', 'key-type', 'user-id', 'org-id', 'role', 'env', 'identity', 'meta'].map((n) => prefix + n)
  ])

  return (identity, requestId, trace, method, target, now, keyHeader) => {
    const headers = identityHeaders(identity, requestId)
    // the trace context for the proxy to forward: the decision is the upstream call's parent
    headers.traceparent = tracing.forwarded(trace)
    if (trace.tracestate !== undefined) headers.tracestate = trace.tracestate
    if (assertions !== undefined && identity !== undefined) {
      const q = target.indexOf('?')
      headers[assertionHeader] = assertions.forRequest(
        identity,
        method,
        q === -1 ? target : target.slice(0, q),
        requestId,
        now
      )
    }
    const remove = identity === undefined
      ? anonymous
      : unset[(identity.userId === undefined ? 1 : 0) | (identity.externalId === undefined ? 2 : 0) |
        (identity.meta === undefined ? 4 : 0)] as Removal
    return { status: 200, headers, remove: keyHeader === undefined ? remove : removal([...remove.names, keyHeader]) }
  }
}
