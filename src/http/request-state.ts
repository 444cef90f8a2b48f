/** What the pipeline learns about one request, for the stages after it and the log line. */
import type { Reason } from '../errors.js'
import { NO_TRACE, type RequestTrace } from '../tracing/request-trace.js'
import type { Identity } from '../decision/identity.js'
import type { ShadowNote, Verdict } from '../decision/verdict.js'

export interface RequestState {
  /** the authorizer: the method of the request decided on (the decision request's own otherwise) */
  method?: string
  /** the authorizer: the way the original request was named (authz.proxy; the gRPC authorizer's), or `ambiguous` */
  via?: 'traefik' | 'nginx' | 'envoy' | 'envoy-grpc' | 'ambiguous'
  /** the path decided on (and forwarded); the raw path, query cut off, when the target was refused */
  path: string
  /** the raw query string, `?` included, forwarded as received */
  query: string
  keyId: string | undefined
  identity: Identity | undefined
  /** allowed by a public rule without a key: `<prefix>Anonymous: true` upstream, no identity headers */
  anonymous: boolean
  /** the path forwarded when the route rewrites it (route-rewrite.ts); undefined: `path` */
  forwardPath: string | undefined
  reason: Reason | undefined
  /** index of the matched rule, for logs and metrics */
  rule: number | undefined
  /** a rate limit applied: the gateway's `RateLimit-*` headers are on the reply (src/ratelimit/respond.ts) */
  rateLimited: boolean
  /**
   * a `cost: upstream` request of a metered key: the rule's `default_cost`, debited after the response unless the
   * upstream reports its own (src/quota/upstream-cost.ts); undefined: nothing to debit then
   */
  upstreamCost: number | undefined
  /** a metered request's fixed cost, spent by its decision: given back if the body stage refuses it (body-limit.ts) */
  refund: (() => void) | undefined
  /** performance.now() when the proxy sent the request upstream (upstream latency); 0 before */
  upstreamSentAt: number
  /** the upstream's status when it answered (the log's `upstream_status`); 0: keygate answered alone */
  upstreamStatus: number
  /** the W3C trace context and the spans (src/tracing/) */
  trace: RequestTrace
  /** the client's address for the log line: the TCP peer, or the client a trusted proxy reports */
  clientIp: string | undefined
  /** what the shadow rules would have answered, where it differs (the log line's `shadow`) */
  shadow: ShadowNote | undefined
}

/** A request's state before any stage ran: `path` decided on, `query` as received. */
export function requestState (path: string, query: string, trace: RequestTrace = NO_TRACE): RequestState {
  // (every field from the start, so every request's state has one shape)
  return {
    method: undefined,
    via: undefined,
    path,
    query,
    keyId: undefined,
    identity: undefined,
    anonymous: false,
    forwardPath: undefined,
    reason: undefined,
    rule: undefined,
    rateLimited: false,
    upstreamCost: undefined,
    refund: undefined,
    upstreamSentAt: 0,
    upstreamStatus: 0,
    trace,
    clientIp: undefined,
    shadow: undefined
  }
}

/**
 * What a verdict of the decision (decide-request.ts) tells the log line and the span:
 * the rule, the key id, the identity of an allowed request, when it was decided and
 * whether the records came from Redis. For every front end that applies a verdict.
 */
export function noteVerdict (state: RequestState, verdict: Verdict): void {
  state.rule = verdict.rule?.index
  state.shadow = verdict.shadow
  const trace = state.trace
  if (trace.span !== undefined) {
    trace.decidedAt = performance.now()
    trace.fromRedis = verdict.fromRedis
  }
  if (!verdict.ok) state.keyId = verdict.keyId
  else if (verdict.identity === undefined) state.anonymous = true
  else {
    state.keyId = verdict.identity.keyId
    state.identity = verdict.identity
    // (metered and allowed: its allowance's headers are on the verdict)
    if (verdict.rule.cost === 'upstream' && verdict.quota?.allowed === true) {
      state.upstreamCost = verdict.rule.defaultCost
    }
  }
}

/** A target as the log line shows one that was not decided on: query cut off, bounded (the log JSON-escapes it). */
export function loggedTarget (target: string): string {
  const q = target.indexOf('?')
  return (q === -1 ? target : target.slice(0, q)).slice(0, 1024)
}

declare module 'fastify' {
  interface FastifyRequest {
    kg: RequestState
  }
}
