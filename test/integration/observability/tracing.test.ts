/**
 * Tracing (docs/tracing.md): W3C `traceparent`/`tracestate` are continued or started
 * on every request, the log line carries `trace_id`, an allowed request's upstream sees
 * the same trace id; with tracing.otlp_endpoint set, spans arrive at a real OTLP/HTTP
 * receiver (test/helpers/otlp-receiver.ts) with the decision as attributes, never a key.
 * Headers go over raw sockets.
 */
import t from 'tap'
import type { Test } from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { SPAN_KIND_CLIENT, SPAN_KIND_SERVER, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../helpers/otlp-receiver.js'
import { rawValues } from '../../helpers/upstream.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-(0[01])$/

/** The one `traceparent` the upstream received last, split. */
function upstreamTraceparent (t: Test, gw: TestGateway): { traceId: string, parentId: string, flags: string } {
  const values = rawValues(gw.upstream.last(), 'traceparent')
  t.equal(values.length, 1, 'the upstream got exactly one traceparent')
  const m = TRACEPARENT.exec(values[0] ?? '')
  t.ok(m, `a version 00 traceparent: ${values[0]}`)
  return { traceId: m?.[1] ?? '', parentId: m?.[2] ?? '', flags: m?.[3] ?? '' }
}

async function withReceiver (t: Test, tracing: string, extraYaml = ''): Promise<{ gw: TestGateway, otlp: OtlpReceiver }> {
  const otlp = await startOtlpReceiver()
  t.teardown(() => otlp.close())
  const gw = await startGateway(t, { yaml: `tracing: { otlp_endpoint: "${otlp.url}", ${tracing} }\n${extraYaml}` })
  return { gw, otlp }
}

/** The spans of a trace that arrived after a flush. */
async function spansOf (gw: TestGateway, otlp: OtlpReceiver, traceId: string): Promise<ReceivedSpan[]> {
  await gw.app.tracing.flush()
  return otlp.spans.filter((s) => s.traceId === traceId)
}

t.test('tracing off: the client\'s trace is continued to the upstream and on the log line', async (t) => {
  const gw = await startGateway(t)
  const alice = await gw.fixtures.personalKey('alice')

  await t.test('a valid traceparent: same trace id, the gateway\'s own parent id, the flags and tracestate kept', async (t) => {
    const res = await gw.get('/api/v1/users', alice.key, { traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE' })
    t.equal(res.status, 200)
    const up = upstreamTraceparent(t, gw)
    t.equal(up.traceId, TRACE, 'the trace id is the client\'s')
    t.not(up.parentId, PARENT, 'the parent is the gateway, not the client\'s span')
    t.equal(up.flags, '01', 'sampled, as the client decided')
    t.same(rawValues(gw.upstream.last(), 'tracestate'), ['rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'], 'tracestate forwarded as one header')
    t.equal((await gw.logOf(res))?.trace_id, TRACE, 'the log line carries the trace id')
    t.equal(res.headers.traceparent, undefined, 'no traceparent on the response')
  })

  await t.test('not sampled by the client: forwarded not sampled', async (t) => {
    await gw.get('/api/v1/users', alice.key, { traceparent: `00-${TRACE}-${PARENT}-00` })
    t.equal(upstreamTraceparent(t, gw).flags, '00')
  })

  await t.test('several tracestate headers: one combined header', async (t) => {
    await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${alice.key}`], ['traceparent', `00-${TRACE}-${PARENT}-01`], ['tracestate', 'rojo=1'], ['Tracestate', 'congo=2']])
    t.same(rawValues(gw.upstream.last(), 'tracestate'), ['rojo=1,congo=2'])
  })

  await t.test('an invalid tracestate is dropped, the traceparent kept', async (t) => {
    await gw.get('/api/v1/users', alice.key, { traceparent: `00-${TRACE}-${PARENT}-01`, tracestate: 'Rojo=1' })
    t.equal(upstreamTraceparent(t, gw).traceId, TRACE)
    t.same(rawValues(gw.upstream.last(), 'tracestate'), [], 'no tracestate upstream')
  })

  const invalid: Array<[string, Array<[string, string]>]> = [
    ['absent', []],
    ['upper-case hex', [['traceparent', `00-${TRACE.toUpperCase()}-${PARENT}-01`]]],
    ['all-zero trace id', [['traceparent', `00-${'0'.repeat(32)}-${PARENT}-01`]]],
    ['version ff', [['traceparent', `ff-${TRACE}-${PARENT}-01`]]],
    ['two traceparent headers', [['traceparent', `00-${TRACE}-${PARENT}-01`], ['traceparent', `00-${TRACE}-${PARENT}-01`]]],
    ['under an identity-header spelling', [['trace_parent', `00-${TRACE}-${PARENT}-01`]]]
  ]
  for (const [name, headers] of invalid) {
    await t.test(`${name}: a new trace is started, and the client's tracestate is not forwarded`, async (t) => {
      const res = await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${alice.key}`], ...headers, ['tracestate', 'rojo=1']])
      t.equal(res.status, 200)
      const up = upstreamTraceparent(t, gw)
      t.not(up.traceId, TRACE, 'a trace id of the gateway\'s')
      t.equal(up.flags, '01', 'sampled (sample_ratio 1.0)')
      t.same(rawValues(gw.upstream.last(), 'tracestate'), [], 'no tracestate')
      t.equal((await gw.logOf(res))?.trace_id, up.traceId, 'the log line and the upstream share the trace id')
    })
  }

  await t.test('refused requests have a trace id on their log line too', async (t) => {
    const before = gw.upstream.requests.length
    for (const [target, key, status] of [['/api/v1/users', undefined, 401], ['/api/v1/users', 'kg_nonsense', 401], ['/api/v1/orgs/globex/x', alice.key, 403], ['/nowhere', alice.key, 404], ['/api/v1/../x', alice.key, 400]] as const) {
      const res = await gw.get(target, key, { traceparent: `00-${TRACE}-${PARENT}-01` })
      t.equal(res.status, status, target)
      t.equal((await gw.logOf(res))?.trace_id, TRACE, `${status}: the client's trace id on the log line`)
    }
    const res = await gw.get('/api/v1/users')
    t.match((await gw.logOf(res))?.trace_id, /^[0-9a-f]{32}$/, 'a trace of its own without a traceparent')
    t.equal(gw.upstream.requests.length, before, 'nothing reached the upstream')
  })
})

t.test('the authorizer: an allowed answer carries the traceparent for the proxy to forward', async (t) => {
  const gw = await startGateway(t, { yaml: 'authz_listen: "127.0.0.1:0"\n' })
  const alice = await gw.fixtures.personalKey('alice')
  const ask = async (headers: Array<[string, string]>): Promise<Awaited<ReturnType<TestGateway['authz']>>> =>
    await gw.authz('GET', '/', [['X-Forwarded-Method', 'GET'], ['X-Forwarded-Uri', '/api/v1/users'], ['Authorization', `Bearer ${alice.key}`], ...headers])

  const res = await ask([['traceparent', `00-${TRACE}-${PARENT}-01`], ['tracestate', 'rojo=1']])
  t.equal(res.status, 200)
  const m = TRACEPARENT.exec(res.headers.traceparent ?? '')
  t.equal(m?.[1], TRACE, 'the client\'s trace')
  t.not(m?.[2], PARENT, 'the decision is the parent')
  t.equal(res.headers.tracestate, 'rojo=1')
  t.equal((await gw.logOf(res))?.trace_id, TRACE)

  const fresh = await ask([])
  t.match(fresh.headers.traceparent, TRACEPARENT, 'started when the request had none')
  t.equal((await gw.logOf(fresh))?.trace_id, TRACEPARENT.exec(fresh.headers.traceparent ?? '')?.[1])
})

t.test('exported: a SERVER span per request and a CLIENT span for the upstream call', async (t) => {
  const { gw, otlp } = await withReceiver(t, 'sample_ratio: 1.0, service_name: "edge-test"', 'authz_listen: "127.0.0.1:0"\n')
  const alice = await gw.fixtures.personalKey('alice')
  const [, id, secret] = alice.key.split('_') as [string, string, string]

  await t.test('allowed: trace id continuity client -> log -> upstream -> spans; parent and child', async (t) => {
    const first = await gw.get('/api/v1/users?token=QUERYSECRET', alice.key, { traceparent: `00-${TRACE}-${PARENT}-01` })
    t.equal(first.status, 200)
    const up = upstreamTraceparent(t, gw)
    t.equal(up.traceId, TRACE)
    t.equal((await gw.logOf(first))?.trace_id, TRACE)
    const second = await gw.get('/api/v1/users', alice.key, { traceparent: `00-${TRACE}-${PARENT}-01` })
    t.equal(second.status, 200)
    const up2 = upstreamTraceparent(t, gw)

    const spans = await spansOf(gw, otlp, TRACE)
    const servers = spans.filter((s) => s.kind === SPAN_KIND_SERVER)
    const clients = spans.filter((s) => s.kind === SPAN_KIND_CLIENT)
    t.equal(servers.length, 2, 'one SERVER span per request')
    t.equal(clients.length, 2, 'one CLIENT span per upstream call')
    for (const [server, client, upstream, cache] of [[servers[0], clients[0], up, 'miss'], [servers[1], clients[1], up2, 'hit']] as const) {
      if (server === undefined || client === undefined) continue
      t.equal(server.parentSpanId, PARENT, 'the SERVER span\'s parent is the client\'s span')
      t.equal(client.parentSpanId, server.spanId, 'the CLIENT span is the SERVER span\'s child')
      t.equal(upstream.parentId, client.spanId, 'the upstream\'s parent is the CLIENT span')
      t.equal(server.name, 'GET /api/v1/*', 'named after the method and route, never the raw path')
      t.match(server.attributes, {
        'http.request.method': 'GET',
        'url.path': '/api/v1/users',
        'http.route': '/api/v1/*',
        'http.response.status_code': 200,
        'keygate.mode': 'proxy',
        'keygate.decision': 'allow',
        'keygate.reason': 'allowed',
        'keygate.key_id': id,
        'keygate.rule': 0,
        'keygate.cache': cache
      })
      t.type(server.attributes['keygate.decided_ms'], 'number', 'the decision\'s timing')
      t.match(client.attributes, { 'http.request.method': 'GET', 'http.response.status_code': 200, 'server.address': '127.0.0.1', 'server.port': gw.upstream.port, 'keygate.upstream': 'core' })
      // (the SDK places each span's start on Date.now(), whole milliseconds, and measures
      // from there on performance.now(): two spans' clocks may differ by up to 1 ms)
      const ms = 1_000_000n
      t.ok(client.startNs + ms >= server.startNs && client.endNs <= server.endNs + ms, 'the upstream call lies within the request (to the SDK clock\'s millisecond)')
      t.ok(client.endNs - client.startNs <= server.endNs - server.startNs, 'and lasts no longer than it')
      t.equal(server.resource['service.name'], 'edge-test')
    }
  })

  await t.test('refused requests get a span with their reason and no CLIENT span', async (t) => {
    const cases: Array<[string, string | undefined, number, string, string]> = [
      ['/api/v1/users', undefined, 401, 'missing_credential', '1'],
      ['/api/v1/users', `kg_${id}_${'x'.repeat(32)}0000`, 401, 'malformed_credential', '2'],
      ['/api/v1/orgs/globex/x', alice.key, 403, 'org_mismatch', '3'],
      ['/nowhere', alice.key, 404, 'no_route', '4']
    ]
    for (const [target, key, status, reason, n] of cases) {
      const traceId = TRACE.slice(0, 31) + n
      const res = await gw.get(target, key, { traceparent: `00-${traceId}-${PARENT}-01` })
      t.equal(res.status, status, target)
      const spans = await spansOf(gw, otlp, traceId)
      t.equal(spans.length, 1, `${status}: one span`)
      t.equal(spans[0]?.kind, SPAN_KIND_SERVER)
      t.match(spans[0]?.attributes, { 'keygate.decision': 'deny', 'keygate.reason': reason, 'http.response.status_code': status }, `${status} ${reason}`)
      if (reason === 'org_mismatch') t.match(spans[0]?.attributes, { 'keygate.key_id': id, 'keygate.rule': 2, 'keygate.cache': 'hit' })
    }
  })

  await t.test('an invalid traceparent is replaced: the spans are a trace of the gateway\'s', async (t) => {
    const res = await gw.get('/api/v1/users', alice.key, { traceparent: `00-${TRACE.toUpperCase()}-${PARENT}-01` })
    const up = upstreamTraceparent(t, gw)
    t.not(up.traceId, TRACE.toLowerCase())
    t.equal((await gw.logOf(res))?.trace_id, up.traceId)
    const spans = await spansOf(gw, otlp, up.traceId)
    t.equal(spans.length, 2)
    t.equal(spans.find((s) => s.kind === SPAN_KIND_SERVER)?.parentSpanId, '', 'a root span')
  })

  await t.test('the authorizer\'s decision is a SERVER span, the parent of the forwarded traceparent', async (t) => {
    const traceId = TRACE.slice(0, 31) + 'a'
    const res = await gw.authz('GET', '/', [['X-Forwarded-Method', 'GET'], ['X-Forwarded-Uri', '/api/v1/users?q=QUERYSECRET'], ['Authorization', `Bearer ${alice.key}`], ['traceparent', `00-${traceId}-${PARENT}-01`]])
    t.equal(res.status, 200)
    const spans = await spansOf(gw, otlp, traceId)
    t.equal(spans.length, 1)
    const span = spans[0]
    t.equal(span?.kind, SPAN_KIND_SERVER)
    t.equal(span?.name, 'GET /api/v1/*')
    t.equal(span?.parentSpanId, PARENT)
    t.equal(TRACEPARENT.exec(res.headers.traceparent ?? '')?.[2], span?.spanId, 'the answer\'s traceparent has the decision\'s span as parent')
    t.match(span?.attributes, { 'keygate.mode': 'authz', 'keygate.decision': 'allow', 'keygate.key_id': id, 'url.path': '/api/v1/users' })
  })

  await t.test('no key material in any exported byte, nor in the log', async (t) => {
    // a key in the path too: it is redacted as in the log
    await gw.get(`/api/v1/open/${alice.key}`, alice.key)
    await gw.app.tracing.flush()
    const all = Buffer.concat(otlp.bodies).toString('utf8')
    t.ok(otlp.bodies.length > 0, 'spans were exported')
    t.ok(all.includes(id), 'the key id is (it is public)')
    t.notOk(all.includes(alice.key), 'never the key')
    t.notOk(all.includes(secret), 'never its secret part')
    t.notOk(all.includes(secret.slice(0, 16)), 'never half of it')
    t.notOk(all.includes('QUERYSECRET'), 'never a query string')
    t.notOk(all.toLowerCase().includes('bearer'), 'never the Authorization header')
    t.ok(otlp.spans.some((s) => s.attributes['url.path'] === `/api/v1/open/kg_${id}_[redacted]`), 'a key in the path is redacted')
    const logs = gw.rawLogs.join('\n')
    t.notOk(logs.includes(secret), 'nor in the log')
    t.equal(otlp.rejected, 0, 'every export was OTLP JSON to /v1/traces')
  })
})

t.test('sample_ratio 0: nothing exported, the trace context still forwarded', async (t) => {
  const { gw, otlp } = await withReceiver(t, 'sample_ratio: 0')
  const alice = await gw.fixtures.personalKey('alice')
  const res = await gw.get('/api/v1/users', alice.key)
  t.equal(res.status, 200)
  const up = upstreamTraceparent(t, gw)
  t.equal(up.flags, '00', 'not sampled')
  t.equal((await gw.logOf(res))?.trace_id, up.traceId)
  await gw.get('/api/v1/users', alice.key, { traceparent: `00-${TRACE}-${PARENT}-00` })
  t.equal(upstreamTraceparent(t, gw).traceId, TRACE, 'a client\'s trace continued')
  await gw.app.tracing.flush()
  t.equal(otlp.spans.length, 0, 'no span exported')

  // parent_based (the default): a client's sampled trace is recorded whatever the ratio
  await gw.get('/api/v1/users', alice.key, { traceparent: `00-${TRACE}-${PARENT}-01` })
  t.equal((await spansOf(gw, otlp, TRACE)).length, 2, 'the client sampled it: exported')
})

t.test('parent_based: false: the ratio decides even for a client\'s sampled trace', async (t) => {
  const { gw, otlp } = await withReceiver(t, 'sample_ratio: 0, parent_based: false')
  const alice = await gw.fixtures.personalKey('alice')
  await gw.get('/api/v1/users', alice.key, { traceparent: `00-${TRACE}-${PARENT}-01` })
  const up = upstreamTraceparent(t, gw)
  t.equal(up.traceId, TRACE, 'the trace is continued')
  t.equal(up.flags, '00', 'but not sampled')
  await gw.app.tracing.flush()
  t.equal(otlp.spans.length, 0, 'nothing exported')
})

t.test('spans still queued are exported when the gateway closes', async (t) => {
  const { gw, otlp } = await withReceiver(t, 'sample_ratio: 1.0')
  const alice = await gw.fixtures.personalKey('alice')
  await gw.get('/api/v1/users', alice.key, { traceparent: `00-${TRACE}-${PARENT}-01` })
  await gw.app.close()
  t.equal(otlp.spans.filter((s) => s.traceId === TRACE).length, 2, 'flushed at close')
})

t.test('an upstream that does not answer: the CLIENT span is an error, with the reason', async (t) => {
  const { gw, otlp } = await withReceiver(t, 'sample_ratio: 1.0')
  const alice = await gw.fixtures.personalKey('alice')
  gw.upstream.setMode({ kind: 'reset' })
  const res = await gw.get('/api/v1/users', alice.key, { traceparent: `00-${TRACE}-${PARENT}-01` })
  t.equal(res.status, 502)
  const spans = await spansOf(gw, otlp, TRACE)
  const server = spans.find((s) => s.kind === SPAN_KIND_SERVER)
  const client = spans.find((s) => s.kind === SPAN_KIND_CLIENT)
  t.match(server?.attributes, { 'keygate.decision': 'allow', 'keygate.reason': 'upstream_error', 'http.response.status_code': 502 })
  t.equal(server?.statusCode, 2, 'the SERVER span is an error')
  t.equal(client?.parentSpanId, server?.spanId)
  t.equal(client?.attributes['error.type'], 'upstream_error')
  t.equal(client?.statusCode, 2, 'the CLIENT span is an error')
  t.equal(client?.attributes['http.response.status_code'], undefined, 'no upstream status')
})
