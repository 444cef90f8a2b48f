/**
 * Tracing for the two listeners that decide (docs/tracing.md): every request carries a
 * W3C trace context (the client's, continued, or one started here), its trace id is on
 * the log line, and an allowed request's upstream (or the proxy asking the authorizer)
 * gets a `traceparent` whose parent is the gateway.
 *
 * With `tracing.otlp_endpoint` set, sampled requests are also OpenTelemetry spans,
 * exported in batches over OTLP/HTTP (JSON, or protobuf with `tracing.protocol:
 * http/protobuf`): one SERVER span per request, and a CLIENT
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
import type { TracingConfig } from '../config/schema.js'
import { clientTrace, newTraceId } from './trace-context.js'
import { forwarded, RequestTrace, setTraceHeaders, type Tracing } from './request-trace.js'
import type { KeyPrefixes } from '../registry/key-format.js'

export async function createTracing (config: TracingConfig, keyPrefix: KeyPrefixes): Promise<Tracing> {
  if (config.otlp_endpoint !== undefined) {
    return await (await import('./span-export.js')).spanExport(config, config.otlp_endpoint, keyPrefix)
  }
  const parentBased = config.parent_based
  // (at 1.0 every trace is sampled: no need to read the trace id)
  const sampledByRatio = config.sample_ratio >= 1 ? () => true : await ratioSampling(config.sample_ratio)
  // nothing exported: the trace context is continued or started, and forwarded
  return {
    exporting: false,
    receive (rawHeaders) {
      const client = clientTrace(rawHeaders)
      if (client !== undefined) {
        return new RequestTrace(
          client.traceId, parentBased ? client.sampled : sampledByRatio(client.traceId), client.tracestate,
          undefined, undefined, 0
        )
      }
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

/** OpenTelemetry's TraceIdRatioBased rule: whether a trace id falls in the sampled share. */
async function ratioSampling (ratio: number): Promise<(traceId: string) => boolean> {
  const [{ ROOT_CONTEXT }, { SamplingDecision, TraceIdRatioBasedSampler }] = await Promise.all([
    import('@opentelemetry/api'), import('@opentelemetry/sdk-trace-base')
  ])
  const sampler = new TraceIdRatioBasedSampler(ratio)
  return (traceId) => sampler.shouldSample(ROOT_CONTEXT, traceId).decision === SamplingDecision.RECORD_AND_SAMPLED
}
