/**
 * tracing.protocol (docs/tracing.md#the-encoding): spans go to a real OTLP/HTTP receiver
 * on a real port as OTLP JSON by default and as OTLP protobuf with `protocol: http/protobuf`.
 * The receiver (test/helpers/otlp-receiver.ts) decodes protobuf with the protobufjs code
 * OpenTelemetry generates from the OTLP .proto files, not with the exporter's own
 * serialiser; the two encodings carry the same spans.
 */
import t from 'tap'
import type { Test } from 'tap'
import { startGateway } from '../../helpers/gateway.js'
import { SPAN_KIND_CLIENT, SPAN_KIND_SERVER, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../helpers/otlp-receiver.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'

interface Exported { otlp: OtlpReceiver, spans: ReceivedSpan[], keyId: string, upstreamPort: number }

/**
 * A gateway exporting in `protocol` (undefined: the default) to a receiver of its own: an
 * allowed request (a SERVER and a CLIENT span) and a refused one (a SERVER span), both in
 * the client's trace, flushed.
 */
async function exported (t: Test, protocol: string | undefined): Promise<Exported> {
  const otlp = await startOtlpReceiver()
  t.teardown(() => otlp.close())
  const setting = protocol === undefined ? '' : `, protocol: ${protocol}`
  const gw = await startGateway(t, { yaml: `tracing: { otlp_endpoint: "${otlp.url}", service_name: "edge-test"${setting} }\n` })
  const alice = await gw.fixtures.personalKey('alice')
  const traceparent = `00-${TRACE}-${PARENT}-01`
  t.equal((await gw.get('/api/v1/users', alice.key, { traceparent, tracestate: 'rojo=00f067aa0ba902b7' })).status, 200)
  t.equal((await gw.get('/api/v1/orgs/globex/x', alice.key, { traceparent })).status, 403)
  await gw.app.tracing.flush()
  const spans = otlp.spans.filter((s) => s.traceId === TRACE)
  return { otlp, spans, keyId: alice.key.split('_')[1] ?? '', upstreamPort: gw.upstream.port }
}

/**
 * A span as both gateways must have made it: what differs between two gateways (span
 * ids, times, the key id, the upstream's port, the decision's timing) is replaced by
 * whether it holds.
 */
function comparable (e: Exported, span: ReceivedSpan): Record<string, unknown> {
  const server = e.spans.find((s) => s.kind === SPAN_KIND_SERVER && s.attributes['http.response.status_code'] === 200)
  const attributes: Record<string, unknown> = { ...span.attributes }
  if ('keygate.key_id' in attributes) attributes['keygate.key_id'] = attributes['keygate.key_id'] === e.keyId
  if ('server.port' in attributes) attributes['server.port'] = attributes['server.port'] === e.upstreamPort
  if ('keygate.decided_ms' in attributes) attributes['keygate.decided_ms'] = typeof attributes['keygate.decided_ms']
  return {
    name: span.name,
    kind: span.kind,
    parent: span.parentSpanId === PARENT ? 'the client' : span.parentSpanId === server?.spanId ? 'the SERVER span' : span.parentSpanId,
    spanId: /^[0-9a-f]{16}$/.test(span.spanId),
    statusCode: span.statusCode,
    times: span.startNs > 0n && span.endNs >= span.startNs,
    attributes,
    resource: span.resource
  }
}

const byKindAndStatus = (a: ReceivedSpan, b: ReceivedSpan): number =>
  a.kind - b.kind || Number(a.attributes['http.response.status_code'] ?? 0) - Number(b.attributes['http.response.status_code'] ?? 0)

t.test('the default encoding is JSON, http/protobuf is protobuf, and both carry the same spans', async (t) => {
  const protobuf = await exported(t, 'http/protobuf')
  t.ok(protobuf.otlp.encodings.length > 0, 'spans were exported')
  t.ok(protobuf.otlp.encodings.every((e) => e === 'protobuf'), 'with http/protobuf, every export is application/x-protobuf')
  t.ok(protobuf.otlp.bodies.every((b) => b[0] !== 0x7b), 'whose bodies are not JSON')
  t.equal(protobuf.otlp.rejected, 0)

  const json = await exported(t, undefined)
  t.ok(json.otlp.encodings.length > 0, 'spans were exported')
  t.ok(json.otlp.encodings.every((e) => e === 'json'), 'by default, every export is application/json')
  t.ok(json.otlp.bodies.every((b) => b[0] === 0x7b), 'whose bodies are JSON')
  t.equal(json.otlp.rejected, 0)

  for (const e of [protobuf, json]) {
    t.equal(e.spans.length, 3, 'two SERVER spans and the allowed request\'s CLIENT span')
    t.equal(e.spans.filter((s) => s.kind === SPAN_KIND_CLIENT).length, 1)
  }
  const decoded = protobuf.spans.sort(byKindAndStatus).map((s) => comparable(protobuf, s))
  t.same(decoded, json.spans.sort(byKindAndStatus).map((s) => comparable(json, s)), 'the same spans in both encodings')
  // and what they are (the JSON encoding's are asserted the same way in tracing.test.ts)
  t.match(decoded, [
    {
      name: 'GET /api/v1/*',
      kind: SPAN_KIND_SERVER,
      parent: 'the client',
      spanId: true,
      statusCode: 0,
      times: true,
      attributes: {
        'http.request.method': 'GET',
        'url.path': '/api/v1/users',
        'http.route': '/api/v1/*',
        'http.response.status_code': 200,
        'keygate.mode': 'proxy',
        'keygate.decision': 'allow',
        'keygate.reason': 'allowed',
        'keygate.key_id': true,
        'keygate.rule': 0,
        'keygate.cache': 'miss',
        'keygate.decided_ms': 'number'
      },
      resource: { 'service.name': 'edge-test' }
    },
    {
      name: 'GET /api/v1/*',
      kind: SPAN_KIND_SERVER,
      parent: 'the client',
      attributes: { 'http.response.status_code': 403, 'keygate.decision': 'deny', 'keygate.reason': 'org_mismatch', 'keygate.rule': 2, 'keygate.cache': 'hit' }
    },
    {
      name: 'GET',
      kind: SPAN_KIND_CLIENT,
      parent: 'the SERVER span',
      statusCode: 0,
      times: true,
      attributes: { 'http.request.method': 'GET', 'http.response.status_code': 200, 'server.address': '127.0.0.1', 'server.port': true, 'keygate.upstream': 'core' }
    }
  ])
})
