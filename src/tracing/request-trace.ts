/**
 * A request's trace and what every tracing front end shares: the trace the log line,
 * the upstream and the spans read (RequestTrace), the Tracing interface, and the
 * `traceparent` a request forwards when no span is recorded. tracing.ts builds the
 * Tracing that exports nothing; span-export.ts the one that exports spans.
 */
import type { SpanContext } from '@opentelemetry/api'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { Mode } from '../metrics/request-metrics.js'
import { newSpanId, traceparent } from './trace-context.js'

/**
 * The gateway's SERVER span while the request lasts (exporting, sampled): its record
 * is made when it ends (span-export.ts).
 */
export interface ServerSpan {
  /** its own context: the trace, its span id, sampled, the client's `tracestate` */
  readonly context: SpanContext
  /** the client's span, its parent (remote); undefined: a root span */
  readonly parent: SpanContext | undefined
  /**
   * Date.now() at receive: the span's start on the wall clock; its other times are measured from there on
   * performance.now()
   */
  readonly startedOn: number
}

/** The upstream call's CLIENT span while it lasts (exporting, sampled, allowed). */
export interface ClientSpan {
  /** its own context, a child of the SERVER span's */
  readonly context: SpanContext
  /** performance.now() when the request left for the upstream */
  readonly startedAt: number
  /** the upstream called and the method: the span's attributes */
  readonly call: UpstreamCall
}

/** A CLIENT span's attributes that hold for every call of one method to one upstream. */
export interface UpstreamCall {
  readonly address: string
  readonly port: number
  readonly upstream: string
  readonly method: string
}

/** One request's trace: what the log line, the upstream and the spans need. */
export class RequestTrace {
  /** the upstream call's span (exporting, sampled, allowed) */
  client: ClientSpan | undefined = undefined
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
    readonly span: ServerSpan | undefined,
    /** the gateway's own span id (its recorded SERVER span's); undefined: one is made when needed */
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
  /**
   * the `traceparent` for a proxy that forwards the request itself (the authorizer's answer): the gateway's span is its
   * parent
   */
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
