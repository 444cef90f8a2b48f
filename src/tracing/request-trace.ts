/**
 * A request's trace and what every tracing front end shares: the trace the log line,
 * the upstream and the spans read (RequestTrace), the Tracing interface, and the
 * `traceparent` a request forwards when no span is recorded. tracing.ts builds the
 * Tracing that exports nothing; span-export.ts the one that exports spans.
 */
import type { Span } from '@opentelemetry/api'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { Mode } from '../metrics/request-metrics.js'
import { newSpanId, traceparent } from './trace-context.js'

/** One request's trace: what the log line, the upstream and the spans need. */
export class RequestTrace {
  /** the upstream call's span (exporting, sampled, allowed) */
  client: Span | undefined = undefined
  /** performance.now() when the upstream's response headers arrived; 0 before */
  answeredAt = 0
  /** performance.now() when the decision's verdict was applied; 0 before (measured while recording) */
  decidedAt = 0
  /** the key's records came from Redis (true) or the cache (false); undefined: no key was looked up */
  fromRedis: boolean | undefined = undefined
  /** the route template the span is named after, when fastify's router did not pick it (the authorizer) */
  route: string | undefined = undefined

  constructor (
    readonly traceId: string,
    readonly sampled: boolean,
    /** the client's `tracestate`, validated, forwarded as it is */
    readonly tracestate: string | undefined,
    /** the gateway's SERVER span, when it is recorded */
    readonly span: Span | undefined,
    /** the gateway's own span id (exporting: its SERVER span's); undefined: one is made when needed */
    readonly spanId: string | undefined,
    /** performance.now() at receive, when the span is recorded; 0 otherwise */
    readonly startedAt: number
  ) {}
}

/** The trace of a request the gateway never decided on (a stand-in until receive runs). */
export const NO_TRACE = new RequestTrace('0'.repeat(32), false, undefined, undefined, undefined, 0)

/** What ending a request's spans reads of it: fastify's request, or a WebSocket upgrade's (src/websocket/). */
export type FinishedRequest = Pick<FastifyRequest, 'kg' | 'method'> & { routeOptions?: { url?: string } }
export type SpanFinisher = (request: FinishedRequest, reply: Pick<FastifyReply, 'statusCode'>, done: () => void) => void

export type ToUpstream = (trace: RequestTrace, headers: IncomingHttpHeaders, method: string) => void

export interface Tracing {
  /** spans are exported (tracing.otlp_endpoint is set) */
  readonly exporting: boolean
  /** at receive: the client's trace continued, or a new one started */
  receive: (rawHeaders: readonly string[]) => RequestTrace
  /** for one upstream: sets `traceparent` (and `tracestate`) on the headers sent, and starts the CLIENT span */
  toUpstream: (name: string, url: string) => ToUpstream
  /** the `traceparent` for a proxy that forwards the request itself (the authorizer's answer): the gateway's span is its parent */
  forwarded: (trace: RequestTrace) => string
  /** the listener's onResponse hook that ends and exports the spans; undefined when nothing is exported */
  finisher: (mode: Mode) => SpanFinisher | undefined
  /** export the spans ended so far (tests) */
  flush: () => Promise<void>
  /** export what is left and stop (at close) */
  shutdown: () => Promise<void>
}

/** Nothing recorded: the gateway's span id is made for the upstream call. */
export function setTraceHeaders (trace: RequestTrace, headers: IncomingHttpHeaders): void {
  headers.traceparent = traceparent(trace.traceId, trace.spanId ?? newSpanId(), trace.sampled)
  if (trace.tracestate !== undefined) headers.tracestate = trace.tracestate
}

export function forwarded (trace: RequestTrace): string {
  return traceparent(trace.traceId, trace.spanId ?? newSpanId(), trace.sampled)
}
