/**
 * The gRPC authorizer with the gateway's other parts on (docs/authorizer-grpc.md):
 * - tracing exported: each decision is a SERVER span of the request's trace, the
 *   parent of the traceparent in the allowed answer; no key in any exported byte;
 * - rate limits: RateLimit-* for the client's response on an allowed answer,
 *   RESOURCE_EXHAUSTED with a 429, Retry-After and RateLimit-* over the limit;
 * - the signed assertion: in the allowed answer, verifiable with the JWK Set, bound to
 *   the original method and path; never removed once keygate sets it.
 */
import { createRemoteJWKSet, jwtVerify } from 'jose'
import t from 'tap'
import { writeKeyFile } from '../../helpers/assertion-keys.js'
import { startGateway } from '../../helpers/gateway.js'
import { authzClient } from '../../helpers/grpc-authz.js'
import { SPAN_KIND_SERVER, startOtlpReceiver } from '../../helpers/otlp-receiver.js'

const GRPC_YAML = 'authz_grpc_listen: "127.0.0.1:0"\n'
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'

t.test('exported: the decision is a SERVER span of the request\'s trace', async (t) => {
  const otlp = await startOtlpReceiver()
  t.teardown(() => otlp.close())
  const gw = await startGateway(t, { yaml: `tracing: { otlp_endpoint: "${otlp.url}", sample_ratio: 1.0 }\n${GRPC_YAML}` })
  const client = authzClient(t, gw.authzGrpcPort)
  const alice = await gw.fixtures.personalKey('alice')
  const res = await client.check('GET', '/api/v1/users?q=QUERYSECRET', alice.key, {
    headers: { traceparent: `00-${TRACE}-${PARENT}-01` }
  })
  t.equal(res.code, 0)
  const refused = await client.check('POST', '/api/v1/users', alice.key, { headers: { traceparent: `00-${TRACE}-${PARENT}-01` } })
  t.equal(refused.code, 7)
  await gw.app.tracing.flush()
  const spans = otlp.spans.filter((s) => s.traceId === TRACE)
  t.equal(spans.length, 2, 'one span per decision')
  const [allowed, denied] = spans
  t.equal(allowed?.kind, SPAN_KIND_SERVER)
  t.equal(allowed?.name, 'GET /api/v1/*', 'named after the method and route')
  t.equal(allowed?.parentSpanId, PARENT, 'the request\'s span is its parent')
  t.equal(res.headers.traceparent?.split('-')[2], allowed?.spanId, 'the answer\'s traceparent: the decision as parent')
  t.match(allowed?.attributes, { 'keygate.mode': 'authz', 'keygate.decision': 'allow', 'keygate.key_id': alice.id, 'url.path': '/api/v1/users' })
  t.match(denied?.attributes, { 'keygate.mode': 'authz', 'http.response.status_code': 403 })
  const all = Buffer.concat(otlp.bodies).toString('utf8')
  t.notOk(all.includes(alice.key), 'never the key')
  t.notOk(all.includes('QUERYSECRET'), 'never a query string')
})

t.test('rate limits: RateLimit-* when allowed; over the limit RESOURCE_EXHAUSTED, 429, Retry-After', async (t) => {
  const gw = await startGateway(t, { yaml: `rate_limits: { default: "2/1m" }\n${GRPC_YAML}` })
  const client = authzClient(t, gw.authzGrpcPort)
  const alice = await gw.fixtures.personalKey('alice')
  const first = await client.check('GET', '/api/v1/users', alice.key)
  t.equal(first.code, 0)
  t.equal(first.responseHeaders['ratelimit-limit'], '2', 'for the client\'s response')
  t.equal(first.responseHeaders['ratelimit-remaining'], '1')
  t.equal(first.headers['ratelimit-limit'], undefined, 'not for the upstream')
  t.equal((await client.check('GET', '/api/v1/users', alice.key)).code, 0)
  const over = await client.check('GET', '/api/v1/users', alice.key)
  t.equal(over.code, 8, 'RESOURCE_EXHAUSTED')
  t.equal(over.httpStatus, 429)
  t.equal(over.headers['ratelimit-remaining'], '0')
  t.match(over.headers['retry-after'], /^[1-9][0-9]*$/)
  const data = await gw.get('/api/v1/users', alice.key)
  t.equal(over.body, data.body, 'the data plane\'s error object')
})

t.test('the assertion: set in the allowed answer, verifiable, bound to the original request', async (t) => {
  const key = writeKeyFile('ES256')
  const gw = await startGateway(t, {
    yaml: GRPC_YAML + 'identity: { assertion: { enabled: true } }\n', env: { KEYGATE_ASSERTION_KEY_FILE: key.file }
  })
  const client = authzClient(t, gw.authzGrpcPort)
  const alice = await gw.fixtures.personalKey('alice')
  const keySet = createRemoteJWKSet(new URL(`http://127.0.0.1:${gw.adminPort}/.well-known/jwks.json`))
  const res = await client.check('HEAD', '/api/v1/%75sers?page=2', alice.key, { headers: { 'x-auth-assertion': 'forged' } })
  t.equal(res.code, 0)
  t.notOk(res.remove.includes('x-auth-assertion'), 'keygate sets it: not removed, overwritten')
  const { payload } = await jwtVerify(res.headers['x-auth-assertion'] ?? '', keySet, { issuer: 'keygate', algorithms: ['ES256'] })
  t.equal(payload.sub, 'alice')
  t.equal(payload.htm, 'HEAD')
  t.equal(payload.htu, '/api/v1/%75sers', 'the path Envoy forwards, no query')
  t.equal(payload.jti, res.headers['x-request-id'])
})
