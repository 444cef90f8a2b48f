/**
 * Spans exported (tracing.otlp_endpoint, src/tracing/tracing.ts): OpenTelemetry's SDK
 * and its OTLP/HTTP exporter, loaded only by a gateway that exports.
 */
import { createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace as otel, type Attributes, type SpanOptions, type Tracer } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-base'
import type { FastifyRequest } from 'fastify'
import type { TracingConfig } from '../config/schema.js'
import type { Mode } from '../metrics/request-metrics.js'
import { createRedactor } from '../redact.js'
import { clientTrace, newSpanId, newTraceId, traceparent } from './trace-context.js'
import { forwarded, RequestTrace, setTraceHeaders, type SpanFinisher, type ToUpstream, type Tracing } from './request-trace.js'

/** Spans waiting for export at most; past it, new spans are dropped until a batch is sent. */
const MAX_QUEUE = 8192

export function spanExport (config: TracingConfig, endpoint: string, keyPrefix: string): Tracing {
  const parentBased = config.parent_based
  // (at 1.0 every root is sampled: no need to read the trace id)
  const root: Sampler = config.sample_ratio >= 1 ? new AlwaysOnSampler() : new TraceIdRatioBasedSampler(config.sample_ratio)
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.service_name }),
    sampler: parentBased ? new ParentBasedSampler({ root }) : root,
    // the gateway's own ids: hex from a pooled random buffer (trace-context.ts)
    idGenerator: { generateTraceId: newTraceId, generateSpanId: newSpanId },
    // (a path is bounded by the header limit; a span carries far less)
    spanLimits: { attributeValueLengthLimit: 2048 },
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: endpoint }), { maxQueueSize: MAX_QUEUE, maxExportBatchSize: 512, scheduledDelayMillis: 1000 })]
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
