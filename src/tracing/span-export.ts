/**
 * Spans exported (tracing.otlp_endpoint, src/tracing/tracing.ts), loaded only by a
 * gateway that exports.
 *
 * The protocol and the batching are OpenTelemetry's: a BatchSpanProcessor queues the
 * ended spans and hands batches to the OTLP/HTTP exporter of `tracing.protocol`, which
 * encodes them (binary protobuf, or JSON), sends them and retries; only the chosen
 * exporter's package is loaded. What is keygate's is the span record only: a request
 * knows its spans' whole life by the time it ends (their ids at receive, their
 * timings, attributes and status at onResponse), so each span is made once, ended,
 * as a SpanRecord (the SDK's ReadableSpan, what the processor and the exporter read)
 * instead of as an SDK Span built at the start and then updated, attribute by
 * attribute, through the API. Sampling is the SDK's sampler (ParentBased over
 * AlwaysOn or TraceIdRatioBased); a request it does not sample has no record.
 *
 * As the SDK: a span starts on the wall clock (Date.now() at receive) and its times
 * are measured from there on the monotonic clock (performance.now()), the CLIENT
 * span's too; the CLIENT span is a child of the SERVER span; both carry the client's
 * `tracestate`; a string attribute is at most 2048 characters.
 */
import type { KeyPrefixes } from '../registry/key-format.js'
import {
  createTraceState, ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace as otel, type Attributes, type HrTime,
  type Link, type SpanContext, type SpanStatus
} from '@opentelemetry/api'
import { hrTimeDuration, millisToHrTime, type InstrumentationScope } from '@opentelemetry/core'
import { resourceFromAttributes, type Resource } from '@opentelemetry/resources'
import {
  AlwaysOnSampler, BatchSpanProcessor, ParentBasedSampler, SamplingDecision, TraceIdRatioBasedSampler,
  type ReadableSpan, type Sampler, type SpanExporter, type TimedEvent
} from '@opentelemetry/sdk-trace-base'
import type { FastifyRequest } from 'fastify'
import type { TracingConfig } from '../config/schema.js'
import type { Mode } from '../metrics/request-metrics.js'
import { createRedactor } from '../redact.js'
import { clientTrace, newSpanId, newTraceId, traceparent } from './trace-context.js'
import {
  forwarded, RequestTrace, setTraceHeaders, type ServerSpan, type SpanFinisher, type ToUpstream, type Tracing,
  type UpstreamCall
} from './request-trace.js'

/** Spans waiting for export at most; past it, new spans are dropped until a batch is sent. */
const MAX_QUEUE = 8192
/** The longest string attribute (a path is bounded by the header limit; a span carries far less). */
const ATTRIBUTE_VALUE_LENGTH = 2048

const UNSET: SpanStatus = Object.freeze({ code: SpanStatusCode.UNSET })
const ERROR: SpanStatus = Object.freeze({ code: SpanStatusCode.ERROR })
const NO_LINKS: Link[] = []
const NO_EVENTS: TimedEvent[] = []
Object.freeze(NO_LINKS)
Object.freeze(NO_EVENTS)
const NO_ATTRIBUTES: Attributes = Object.freeze({})

/** One ended span as the processor and the exporter read it (the SDK's ReadableSpan). */
class SpanRecord implements ReadableSpan {
  constructor (
    readonly name: string,
    readonly kind: SpanKind,
    private readonly context: SpanContext,
    readonly parentSpanContext: SpanContext | undefined,
    readonly startTime: HrTime,
    readonly endTime: HrTime,
    readonly status: SpanStatus,
    readonly attributes: Attributes,
    readonly resource: Resource,
    readonly instrumentationScope: InstrumentationScope
  ) {}

  spanContext (): SpanContext { return this.context }
  get duration (): HrTime { return hrTimeDuration(this.startTime, this.endTime) }
  get ended (): boolean { return true }
  get links (): Link[] { return NO_LINKS }
  get events (): TimedEvent[] { return NO_EVENTS }
  get droppedAttributesCount (): number { return 0 }
  get droppedEventsCount (): number { return 0 }
  get droppedLinksCount (): number { return 0 }
}

function limited (value: string): string {
  return value.length > ATTRIBUTE_VALUE_LENGTH ? value.slice(0, ATTRIBUTE_VALUE_LENGTH) : value
}

/** OpenTelemetry's OTLP/HTTP exporter for the encoding: JSON unless `http/protobuf` is asked for. */
async function otlpExporter (protocol: TracingConfig['protocol'], url: string): Promise<SpanExporter> {
  return protocol === 'http/protobuf'
    ? new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter({ url })
    : new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({ url })
}

export async function spanExport (config: TracingConfig, endpoint: string, keyPrefix: KeyPrefixes): Promise<Tracing> {
  // (at 1.0 every root is sampled: no need to read the trace id)
  const root: Sampler = config.sample_ratio >= 1
    ? new AlwaysOnSampler()
    : new TraceIdRatioBasedSampler(config.sample_ratio)
  const sampler = config.parent_based ? new ParentBasedSampler({ root }) : root
  const processor = new BatchSpanProcessor(await otlpExporter(config.protocol, endpoint), {
    maxQueueSize: MAX_QUEUE, maxExportBatchSize: 512, scheduledDelayMillis: 1000
  })
  const resource = resourceFromAttributes({ 'service.name': config.service_name })
  const scope: InstrumentationScope = { name: 'keygate' }
  const redact = createRedactor(keyPrefix)

  function receive (rawHeaders: readonly string[]): RequestTrace {
    const client = clientTrace(rawHeaders)
    // the client's span, the gateway's parent (the context the sampler reads)
    const parent: SpanContext | undefined = client === undefined
      ? undefined
      : {
          traceId: client.traceId,
          spanId: client.parentId,
          traceFlags: client.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
          isRemote: true,
          ...(client.tracestate === undefined ? {} : { traceState: createTraceState(client.tracestate) })
        }
    const traceId = parent?.traceId ?? newTraceId()
    const decision = sampler.shouldSample(
      parent === undefined ? ROOT_CONTEXT : otel.setSpanContext(ROOT_CONTEXT, parent),
      traceId, 'HTTP', SpanKind.SERVER, NO_ATTRIBUTES, NO_LINKS
    ).decision
    if (decision !== SamplingDecision.RECORD_AND_SAMPLED) {
      return new RequestTrace(traceId, false, client?.tracestate, undefined, undefined, 0)
    }
    const spanId = newSpanId()
    const span: ServerSpan = {
      context: parent?.traceState === undefined
        ? { traceId, spanId, traceFlags: TraceFlags.SAMPLED }
        : { traceId, spanId, traceFlags: TraceFlags.SAMPLED, traceState: parent.traceState },
      parent,
      startedOn: Date.now()
    }
    return new RequestTrace(traceId, true, client?.tracestate, span, spanId, performance.now())
  }

  function toUpstream (name: string, url: string): ToUpstream {
    const { hostname, port, protocol } = new URL(url)
    const address = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname
    const portNumber = port === '' ? (protocol === 'https:' ? 443 : 80) : Number(port)
    // the CLIENT span's attributes, made once per method
    const calls = new Map<string, UpstreamCall>()
    const callFor = (method: string): UpstreamCall => {
      let call = calls.get(method)
      if (call === undefined) {
        call = { address, port: portNumber, upstream: name, method }
        calls.set(method, call)
      }
      return call
    }
    return function toUpstream (trace, headers, method) {
      const server = trace.span
      if (server === undefined) return setTraceHeaders(trace, headers)
      const spanId = newSpanId()
      const parent = server.context
      trace.client = {
        context: parent.traceState === undefined
          ? { traceId: trace.traceId, spanId, traceFlags: TraceFlags.SAMPLED }
          : { traceId: trace.traceId, spanId, traceFlags: TraceFlags.SAMPLED, traceState: parent.traceState },
        startedAt: performance.now(),
        call: callFor(method)
      }
      headers.traceparent = traceparent(trace.traceId, spanId, true)
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
      // the wall clock at performance.now() 0, as the request's start placed it
      const origin = span.startedOn - t.startedAt
      const end = millisToHrTime(origin + performance.now())
      const status = reply.statusCode
      const reason = s.reason ?? (status >= 500 ? 'internal_error' : 'bad_request')
      const method = s.method ?? request.method
      const route = t.route ?? request.routeOptions?.url
      const attributes: Attributes = {
        'http.request.method': method,
        'url.path': limited(redact.path(s.path)),
        'http.response.status_code': status,
        'keygate.mode': mode,
        'keygate.decision': s.identity === undefined ? 'deny' : 'allow',
        'keygate.reason': reason
      }
      if (route !== undefined) attributes['http.route'] = limited(route)
      if (s.keyId !== undefined) attributes['keygate.key_id'] = s.keyId
      if (s.rule !== undefined) attributes['keygate.rule'] = s.rule
      if (t.fromRedis !== undefined) attributes['keygate.cache'] = t.fromRedis ? 'miss' : 'hit'
      if (t.decidedAt !== 0) attributes['keygate.decided_ms'] = Math.round((t.decidedAt - t.startedAt) * 1000) / 1000

      const client = t.client
      if (client !== undefined) {
        const { call } = client
        const start = millisToHrTime(origin + client.startedAt)
        const answered = t.answeredAt !== 0
        const callAttributes: Attributes = {
          'server.address': call.address,
          'server.port': call.port,
          'keygate.upstream': call.upstream,
          'http.request.method': call.method
        }
        // the upstream answered: its status is the response's; no answer: the gateway's
        // 502 / 504 (or the client went away)
        if (answered) callAttributes['http.response.status_code'] = status
        else callAttributes['error.type'] = reason
        processor.onEnd(new SpanRecord(call.method, SpanKind.CLIENT, client.context, span.context, start,
          answered ? millisToHrTime(origin + t.answeredAt) : end, answered && status < 500 ? UNSET : ERROR,
          callAttributes, resource, scope))
      }
      processor.onEnd(new SpanRecord(
        route === undefined ? method : method + ' ' + route, SpanKind.SERVER, span.context, span.parent,
        millisToHrTime(origin + t.startedAt), end, status >= 500 ? ERROR : UNSET, attributes, resource, scope
      ))
      done()
    }
  }

  return {
    exporting: true,
    receive,
    toUpstream,
    forwarded,
    finisher,
    flush: async () => { await processor.forceFlush() },
    shutdown: async () => { await processor.shutdown() }
  }
}
