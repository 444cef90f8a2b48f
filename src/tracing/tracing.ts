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
 */
import { createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace as otel, type Attributes, type Span, type SpanOptions, type Tracer } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, SamplingDecision, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-base'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { TracingConfig } from '../config/schema.js'
import type { Mode } from '../metrics/request-metrics.js'
import { createRedactor } from '../redact.js'
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

/** Spans waiting for export at most; past it, new spans are dropped until a batch is sent. */
const MAX_QUEUE = 8192

export function createTracing (config: TracingConfig, keyPrefix: string): Tracing {
  const ratio = new TraceIdRatioBasedSampler(config.sample_ratio)
  const parentBased = config.parent_based
  const sampledByRatio = config.sample_ratio >= 1
    ? () => true
    : (traceId: string) => ratio.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED

  if (config.otlp_endpoint === undefined) {
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

  // (at 1.0 every root is sampled: no need to read the trace id)
  const root: Sampler = config.sample_ratio >= 1 ? new AlwaysOnSampler() : ratio
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.service_name }),
    sampler: parentBased ? new ParentBasedSampler({ root }) : root,
    // the gateway's own ids: hex from a pooled random buffer (trace-context.ts)
    idGenerator: { generateTraceId: newTraceId, generateSpanId: newSpanId },
    // (a path is bounded by the header limit; a span carries far less)
    spanLimits: { attributeValueLengthLimit: 2048 },
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: config.otlp_endpoint }), { maxQueueSize: MAX_QUEUE, maxExportBatchSize: 512, scheduledDelayMillis: 1000 })]
  })
  const tracer: Tracer = provider.getTracer('keygate')
  const redact = createRedactor(keyPrefix)

  function receive (rawHeaders: readonly string[]): RequestTrace {
    const client = clientTrace(rawHeaders)
    const parent = client === undefined
      ? ROOT_CONTEXT
      : otel.setSpanContext(ROOT_CONTEXT, {
        traceId: client.traceId,
        spanId: client.parentId,
        traceFlags: client.sampled ? 1 : 0,
        isRemote: true,
        ...(client.tracestate === undefined ? {} : { traceState: createTraceState(client.tracestate) })
      })
    // (named when the route is known, at the end)
    const span = tracer.startSpan('HTTP', { kind: SpanKind.SERVER }, parent)
    const { traceId, spanId, traceFlags } = span.spanContext()
    const recording = span.isRecording()
    return new RequestTrace(traceId, (traceFlags & 1) === 1, client?.tracestate, recording ? span : undefined, spanId, recording ? performance.now() : 0)
  }

  function toUpstream (name: string, url: string): ToUpstream {
    const { hostname, port, protocol } = new URL(url)
    const upstream: Attributes = {
      'server.address': hostname.startsWith('[') ? hostname.slice(1, -1) : hostname,
      'server.port': port === '' ? (protocol === 'https:' ? 443 : 80) : Number(port),
      'keygate.upstream': name
    }
    // the CLIENT span's options, made once per method
    const optionsByMethod = new Map<string, SpanOptions>()
    const optionsFor = (method: string): SpanOptions => {
      let options = optionsByMethod.get(method)
      if (options === undefined) {
        options = { kind: SpanKind.CLIENT, attributes: { ...upstream, 'http.request.method': method } }
        optionsByMethod.set(method, options)
      }
      return options
    }
    return function toUpstream (trace, headers, method) {
      const server = trace.span
      if (server === undefined) return setTraceHeaders(trace, headers)
      const client = tracer.startSpan(method, optionsFor(method), otel.setSpan(ROOT_CONTEXT, server))
      trace.client = client
      headers.traceparent = traceparent(trace.traceId, client.spanContext().spanId, trace.sampled)
      if (trace.tracestate !== undefined) headers.tracestate = trace.tracestate
    }
  }

  function finisher (mode: Mode): SpanFinisher {
    return function finishSpans (request, reply, done) {
      const s = request.kg as FastifyRequest['kg'] | null
      const t = s?.trace
      const span = t?.span
      if (s === null || s === undefined || t === undefined || span === undefined) {
        done()
        return
      }
      const status = reply.statusCode
      const reason = s.reason ?? (status >= 500 ? 'internal_error' : 'bad_request')
      const method = s.method ?? request.method
      const route = t.route ?? request.routeOptions?.url
      span.updateName(route === undefined ? method : method + ' ' + route)
      const attributes: Attributes = {
        'http.request.method': method,
        'url.path': redact.path(s.path),
        'http.response.status_code': status,
        'keygate.mode': mode,
        'keygate.decision': s.identity === undefined ? 'deny' : 'allow',
        'keygate.reason': reason
      }
      if (route !== undefined) attributes['http.route'] = route
      if (s.keyId !== undefined) attributes['keygate.key_id'] = s.keyId
      if (s.rule !== undefined) attributes['keygate.rule'] = s.rule
      if (t.fromRedis !== undefined) attributes['keygate.cache'] = t.fromRedis ? 'miss' : 'hit'
      if (t.decidedAt !== 0) attributes['keygate.decided_ms'] = Math.round((t.decidedAt - t.startedAt) * 1000) / 1000
      span.setAttributes(attributes)
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR })

      const client = t.client
      if (client !== undefined) {
        if (t.answeredAt !== 0) {
          // the upstream answered: its status is the response's
          client.setAttribute('http.response.status_code', status)
          if (status >= 500) client.setStatus({ code: SpanStatusCode.ERROR })
          client.end(t.answeredAt)
        } else {
          // no answer: the gateway's 502 / 504 (or the client went away)
          client.setAttribute('error.type', reason)
          client.setStatus({ code: SpanStatusCode.ERROR })
          client.end()
        }
      }
      span.end()
      done()
    }
  }

  return {
    exporting: true,
    receive,
    toUpstream,
    forwarded,
    finisher,
    flush: async () => { await provider.forceFlush() },
    shutdown: async () => { await provider.shutdown() }
  }
}

/** Nothing recorded: the gateway's span id is made for the upstream call. */
function setTraceHeaders (trace: RequestTrace, headers: IncomingHttpHeaders): void {
  headers.traceparent = traceparent(trace.traceId, trace.spanId ?? newSpanId(), trace.sampled)
  if (trace.tracestate !== undefined) headers.tracestate = trace.tracestate
}

function forwarded (trace: RequestTrace): string {
  return traceparent(trace.traceId, trace.spanId ?? newSpanId(), trace.sampled)
}
