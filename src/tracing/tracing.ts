/**
 * Tracing for the two listeners that decide (docs/tracing.md): every request carries a
 * W3C trace context (the client's, continued, or one started here), its trace id is on
 * the log line, and an allowed request's upstream (or the proxy asking the authorizer)
 * gets a `traceparent` whose parent is the gateway.
 *
 * With `tracing.otlp_endpoint` set, sampled requests are also OpenTelemetry spans,
 * exported in batches over OTLP/HTTP (JSON): one SERVER span per request, and a CLIENT
 * span, its child, for the upstream call. Spans are created with explicit parent
 * contexts: nothing is registered globally (no context manager, no instrumentation).
 * Attributes are the decision's (decision, reason, key id, rule, cache) and HTTP's
 * (method, decided path without its query, status); never a header, a query string or
 * a key (a key-shaped path is redacted as in the log, src/redact.ts).
 *
 * Sampling: the share `tracing.sample_ratio` of the traces the gateway starts (by trace
 * id, OpenTelemetry's TraceIdRatioBased); a client's own sampled flag decides for its
 * trace while `tracing.parent_based` is on (ParentBased, OpenTelemetry's default). The
 * same rule sets the sampled flag forwarded when nothing is exported.
 *
 * OpenTelemetry's SDK and exporter (span-export.ts) are loaded only with
 * `tracing.otlp_endpoint` set, and its sampler only for a ratio below 1: a gateway
 * that exports nothing holds neither (they are a few MiB of heap).
 */
import type { Span } from '@opentelemetry/api'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { TracingConfig } from '../config/schema.js'
import type { Mode } from '../metrics/request-metrics.js'
import { clientTrace, newSpanId, newTraceId, traceparent } from './trace-context.js'

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

export async function createTracing (config: TracingConfig, keyPrefix: string): Promise<Tracing> {
  if (config.otlp_endpoint !== undefined) return (await import('./span-export.js')).spanExport(config, config.otlp_endpoint, keyPrefix)
  const parentBased = config.parent_based
  // (at 1.0 every trace is sampled: no need to read the trace id)
  const sampledByRatio = config.sample_ratio >= 1 ? () => true : await ratioSampling(config.sample_ratio)
  // nothing exported: the trace context is continued or started, and forwarded
  return {
    exporting: false,
    receive (rawHeaders) {
      const client = clientTrace(rawHeaders)
      if (client !== undefined) return new RequestTrace(client.traceId, parentBased ? client.sampled : sampledByRatio(client.traceId), client.tracestate, undefined, undefined, 0)
      const traceId = newTraceId()
      return new RequestTrace(traceId, sampledByRatio(traceId), undefined, undefined, undefined, 0)
    },
    toUpstream: () => setTraceHeaders,
    forwarded,
    finisher: () => undefined,
    flush: async () => {},
    shutdown: async () => {}
  }
}

/** Nothing recorded: the gateway's span id is made for the upstream call. */
export function setTraceHeaders (trace: RequestTrace, headers: IncomingHttpHeaders): void {
  headers.traceparent = traceparent(trace.traceId, trace.spanId ?? newSpanId(), trace.sampled)
  if (trace.tracestate !== undefined) headers.tracestate = trace.tracestate
}

export function forwarded (trace: RequestTrace): string {
  return traceparent(trace.traceId, trace.spanId ?? newSpanId(), trace.sampled)
}

/** OpenTelemetry's TraceIdRatioBased rule: whether a trace id falls in the sampled share. */
async function ratioSampling (ratio: number): Promise<(traceId: string) => boolean> {
  const [{ ROOT_CONTEXT }, { SamplingDecision, TraceIdRatioBasedSampler }] = await Promise.all([import('@opentelemetry/api'), import('@opentelemetry/sdk-trace-base')])
  const sampler = new TraceIdRatioBasedSampler(ratio)
  return (traceId) => sampler.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED
}
