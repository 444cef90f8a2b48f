/**
 * The gRPC authorizer (docs/authorizer-grpc.md): Envoy's `Authorization/Check` asked
 * by a real grpc-js client built from the same `.proto` files, against a real Redis.
 * Allowed: status OK, the identity headers set over a client's copies, the key and the
 * identity headers not set removed. Refused: the gRPC status for the HTTP status, and
 * the data plane's status, error object and challenge in `denied_response`.
 */
import t from 'tap'
import { authzClient, type AuthzClient, type Checked } from '../../helpers/grpc-authz.js'
import { startGateway, type LogLine, type TestGateway } from '../../helpers/gateway.js'
import type { RawResponse } from '../../helpers/raw-http.js'

const GRPC = { OK: 0, INVALID_ARGUMENT: 3, NOT_FOUND: 5, PERMISSION_DENIED: 7, RESOURCE_EXHAUSTED: 8, UNAUTHENTICATED: 16 }

let gw: TestGateway
let client: AuthzClient
/** the decision's log line, by its request id (lines are written in batches) */
async function lineOf (res: Checked): Promise<LogLine | undefined> {
  return await gw.logOf({ headers: res.headers } as unknown as RawResponse)
}

t.before(async () => {
  gw = await startGateway(t, { yaml: 'authz_grpc_listen: "127.0.0.1:0"\n' })
  client = authzClient(t, gw.authzGrpcPort)
})

t.test('allowed: OK, the identity headers, the request id, the trace context; nothing reaches the upstream', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const before = gw.upstream.requests.length
  const res = await client.check('GET', '/api/v1/users?page=2', alice.key)
  t.equal(res.code, GRPC.OK)
  t.equal(res.response.denied_response, undefined, 'no denied_response')
  t.equal(res.headers['x-auth-key-id'], alice.id)
  t.equal(res.headers['x-auth-key-type'], 'personal')
  t.equal(res.headers['x-auth-user-id'], 'alice')
  t.equal(res.headers['x-auth-org-id'], 'acme')
  t.equal(res.headers['x-auth-role'], 'reader')
  t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/)
  t.match(res.headers.traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
  t.ok(res.headers['x-auth-assertion'] === undefined, 'no assertion unless it is enabled')
  for (const h of res.response.ok_response?.headers ?? []) {
    t.equal(h.append_action as unknown, 2, `${h.header.key} overwrites a client's copy`)
  }
  t.ok(res.remove.includes('authorization'), 'the key is removed from the request Envoy forwards')
  t.ok(res.remove.includes('x-auth-assertion'), 'the assertion keygate does not set is removed')
  t.equal(gw.upstream.requests.length, before, 'the upstream saw nothing')

  const line = await lineOf(res)
  t.ok(line !== undefined, 'one log line')
  t.match(line, { mode: 'authz', via: 'envoy-grpc', method: 'GET', path: '/api/v1/users', status: 200, reason: 'allowed', key_id: alice.id, client_ip: '203.0.113.9' })
  t.notOk(JSON.stringify(gw.logs).includes(alice.key), 'the key is in no log line')
})

t.test('a key in the decided path is logged as its key id at most, a test key (keys.test_prefix) too', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const { result: test } = await gw.fixtures.admin.createKey({ type: 'bot', role: 'reader', org: 'acme', env: 'test' })
  for (const [name, key] of [['live', alice.key], ['test', test.key]] as const) {
    const res = await client.check('GET', `/api/v1/open/${key}`, alice.key)
    const line = await lineOf(res)
    t.ok(line !== undefined, `${name}: one log line`)
    t.notOk(JSON.stringify(line).includes(key), `${name}: the key is not in the line`)
    t.ok(String(line?.path).includes(key.split('_').slice(0, 2).join('_')), `${name}: its prefix and id are`)
  }
  t.notOk(JSON.stringify(gw.logs).includes(test.key), 'the test key is in no log line')
})

t.test('a traceparent among the request headers continues the trace', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  const res = await client.check('GET', '/api/v1/users', alice.key, { headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } })
  t.equal(res.code, GRPC.OK)
  t.equal(res.headers.traceparent?.split('-')[1], traceId, 'the same trace')
  t.not(res.headers.traceparent?.split('-')[2], '00f067aa0ba902b7', 'the decision is the parent')
  const line = await lineOf(res)
  t.equal(line?.trace_id, traceId, 'the log line carries the trace id')
})

t.test('refused: the data plane status, error object and challenge, as denied_response', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const bot = await gw.fixtures.botKey('orgreader', 'globex')
  const cases: Array<[string, string, string, string | undefined, number, number]> = [
    ['no key', 'GET', '/api/v1/users', undefined, GRPC.UNAUTHENTICATED, 401],
    ['a malformed key', 'GET', '/api/v1/users', 'kg_notakey', GRPC.UNAUTHENTICATED, 401],
    ['a revoked-looking unknown key', 'GET', '/api/v1/users', alice.key.slice(0, -4) + 'AAAA', GRPC.UNAUTHENTICATED, 401],
    ['insufficient permission', 'POST', '/api/v1/users', alice.key, GRPC.PERMISSION_DENIED, 403],
    ['another org', 'GET', '/api/v1/orgs/acme/projects', bot.key, GRPC.PERMISSION_DENIED, 403],
    ['no route', 'GET', '/elsewhere', alice.key, GRPC.NOT_FOUND, 404],
    ['a dot segment', 'GET', '/api/v1/open/../users', alice.key, GRPC.INVALID_ARGUMENT, 400],
    ['an encoded dot segment', 'GET', '/api/v1/open/%2e%2e/users', alice.key, GRPC.INVALID_ARGUMENT, 400],
    ['an encoded slash', 'GET', '/api/v1/open%2F..%2Fusers', alice.key, GRPC.INVALID_ARGUMENT, 400],
    ['a backslash', 'GET', '/api/v1/open\\..\\users', alice.key, GRPC.INVALID_ARGUMENT, 400],
    ['an absolute-form target', 'GET', 'http://api.example/api/v1/users', alice.key, GRPC.INVALID_ARGUMENT, 400],
    ['a method no parser admits', 'GE T', '/api/v1/users', alice.key, GRPC.INVALID_ARGUMENT, 400]
  ]
  for (const [what, method, path, key, code, status] of cases) {
    const res = await client.check(method, path, key)
    t.equal(res.code, code, `${what}: gRPC status`)
    t.equal(res.httpStatus, status, `${what}: HTTP status`)
    t.same(res.response.ok_response, undefined, `${what}: no ok_response`)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${what}: content type`)
    t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/, `${what}: request id`)
    if (method === 'GE T') {
      t.equal(res.body, JSON.stringify({ error: { code: 'bad_request', message: 'Malformed request', status: 400 } }))
      continue
    }
    const data = await gw.send(method, path, key === undefined ? {} : { Authorization: `Bearer ${key}` })
    t.equal(res.httpStatus, data.status, `${what}: the data plane's status`)
    t.equal(res.body, data.body, `${what}: the data plane's error object`)
    t.equal(res.headers['www-authenticate'], data.headers['www-authenticate'], `${what}: the data plane's challenge`)
    const line = await lineOf(res)
    t.match(line, { mode: 'authz', via: 'envoy-grpc', status }, `${what}: its log line`)
  }
})

t.test("a client's own identity headers are removed or overwritten", async (t) => {
  const bot = await gw.fixtures.botKey('orgreader', 'globex')
  const res = await client.check('GET', '/api/v1/orgs/globex/projects', bot.key, {
    headers: { 'x-auth-user-id': 'root', 'x-auth-role': 'admin', 'x-auth-assertion': 'forged' }
  })
  t.equal(res.code, GRPC.OK)
  t.ok(res.remove.includes('x-auth-user-id'), 'a bot key has no user: the client\'s copy is removed')
  t.ok(res.remove.includes('x-auth-assertion'), 'the client\'s assertion is removed')
  t.equal(res.headers['x-auth-role'], 'orgreader', 'the role is keygate\'s, overwriting the client\'s')
  t.equal(res.headers['x-auth-user-id'], undefined)
})

t.test('the headers as a list (encode_raw_headers) decide the same', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const ok = await client.check('GET', '/api/v1/users', alice.key, { rawHeaderList: true })
  t.equal(ok.code, GRPC.OK)
  t.equal(ok.headers['x-auth-key-id'], alice.id)
  const no = await client.check('GET', '/api/v1/users', undefined, { rawHeaderList: true })
  t.equal(no.code, GRPC.UNAUTHENTICATED)
})

t.test('headers past limits.header_count: 431, INVALID_ARGUMENT', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const headers = Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`x-h${i}`, 'v']))
  const res = await client.check('GET', '/api/v1/users', alice.key, { headers })
  t.equal(res.code, GRPC.INVALID_ARGUMENT)
  t.equal(res.httpStatus, 431)
})

t.test('health: SERVING while Redis answers, for "" and the Authorization service', async (t) => {
  t.equal(await client.health(''), 'SERVING')
  t.equal(await client.health('envoy.service.auth.v3.Authorization'), 'SERVING')
})

t.test('the decisions are counted in the authorizer metrics', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  await client.check('GET', '/api/v1/users', alice.key)
  const metrics = await gw.admin('GET', '/metrics')
  t.match(metrics.body, /keygate_requests_total\{[^}]*mode="authz"[^}]*status="200"[^}]*\} [1-9]/)
})
