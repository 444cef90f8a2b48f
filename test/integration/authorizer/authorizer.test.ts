/**
 * The authorizer listener (docs/authorizer.md). Every decision request goes over a raw
 * socket, in the three shapes: Traefik (X-Forwarded-Method + X-Forwarded-Uri), nginx
 * (X-Original-Method + X-Original-URI) and Envoy (its own method and target, minus
 * authz.path_prefix). A decision is the data plane's decision: the same status, body
 * and challenge, from the same cache; allowed, 200 with the identity headers.
 *
 * The tests on the default rules share one gateway, each with its own keys (and its
 * own user where it changes one); a test that needs other configuration, or counts
 * metrics, starts its own.
 */
import t from 'tap'
import type { Test } from 'tap'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { writeKeyFile } from '../../helpers/assertion-keys.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { ACCEPTED_TARGETS, DECODED_RULE_TARGETS, REFUSED_TARGETS } from '../../helpers/path-cases.js'
import { rawRequest, type RawResponse } from '../../helpers/raw-http.js'

const RULES = `
authz_listen: "127.0.0.1:0"
rules:
  - { method: GET,  path: /api/v1/users,        permissions: [users:read] }
  - { method: POST, path: /api/v1/users,        permissions: [users:write] }
  - { method: "*",  path: /api/v1/orgs/:org/*,  permissions: [orgs:read], org_param: org }
  - { method: "*",  path: /api/v1/*,            permissions: [] }
`
type Shape = 'traefik' | 'nginx' | 'envoy'
const SHAPES: Shape[] = ['traefik', 'nginx', 'envoy']

/** A decision request about `method target`, byte for byte, in one proxy's shape. */
function decisionRequest (shape: Shape, method: string, target: string | Buffer, headers: Array<[string, string]>, envoyPrefix = ''): Buffer {
  const t = typeof target === 'string' ? Buffer.from(target, 'utf8') : target
  const lines = (hs: Array<[string, string]>): string => hs.map(([n, v]) => `${n}: ${v}\r\n`).join('')
  const tail = Buffer.from(lines(headers) + 'Connection: close\r\n\r\n', 'latin1')
  if (shape === 'envoy') {
    return Buffer.concat([Buffer.from(`${method} ${envoyPrefix}`, 'latin1'), t, Buffer.from(' HTTP/1.1\r\nHost: keygate\r\n', 'latin1'), tail])
  }
  const [m, u] = shape === 'traefik' ? ['X-Forwarded-Method', 'X-Forwarded-Uri'] : ['X-Original-Method', 'X-Original-URI']
  const ownTarget = shape === 'traefik' ? '/' : '/_keygate'
  return Buffer.concat([
    Buffer.from(`GET ${ownTarget} HTTP/1.1\r\nHost: keygate\r\n${m}: ${method}\r\n${u}: `, 'latin1'), t, Buffer.from('\r\n', 'latin1'), tail
  ])
}

async function decide (gw: TestGateway, shape: Shape, method: string, target: string | Buffer, key?: string, extra: Array<[string, string]> = []): Promise<RawResponse> {
  const headers: Array<[string, string]> = key === undefined ? [...extra] : [['Authorization', `Bearer ${key}`], ...extra]
  return await rawRequest(gw.authzPort, decisionRequest(shape, method, target, headers))
}

/** the gateway of the tests on RULES alone */
let gw: TestGateway
t.before(async () => { gw = await startGateway(t, { yaml: RULES }) })

function sameAnswer (t: Test, decision: RawResponse, data: RawResponse, what: string): void {
  t.equal(decision.status, data.status, `${what}: the data plane's status`)
  t.equal(decision.body, data.body, `${what}: the data plane's error object`)
  t.equal(decision.headers['content-type'], data.headers['content-type'], `${what}: content type`)
  t.equal(decision.headers['www-authenticate'], data.headers['www-authenticate'], `${what}: the data plane's challenge`)
  t.ok((decision.headers['x-request-id'] ?? '') !== '', `${what}: X-Request-Id`)
}

t.test('allowed, in each shape: 200, empty body, the identity headers; nothing reaches an upstream', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const bot = await gw.fixtures.botKey('orgreader', 'globex')
  for (const shape of SHAPES) {
    await t.test(shape, async (t) => {
      const before = gw.upstream.requests.length
      const res = await decide(gw, shape, 'GET', '/api/v1/users?page=2', alice.key)
      t.equal(res.status, 200)
      t.equal(res.body, '', 'empty body')
      t.equal(res.headers['x-auth-key-id'], alice.id)
      t.equal(res.headers['x-auth-key-type'], 'personal')
      t.equal(res.headers['x-auth-user-id'], 'alice')
      t.equal(res.headers['x-auth-org-id'], 'acme')
      t.equal(res.headers['x-auth-role'], 'reader')
      t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/)
      t.equal(res.headers['x-auth-assertion'], undefined, 'no assertion unless it is enabled')

      const botRes = await decide(gw, shape, 'DELETE', '/api/v1/orgs/globex/projects/1', bot.key)
      t.equal(botRes.status, 200, 'a BOT key, a method with a body, a path parameter')
      t.equal(botRes.headers['x-auth-key-type'], 'bot')
      t.equal(botRes.headers['x-auth-user-id'], undefined, 'no user for a BOT key')
      t.equal(botRes.headers['x-auth-role'], 'orgreader')
      t.equal(gw.upstream.requests.length, before, 'the authorizer never calls an upstream')

      const line = await gw.logOf(res)
      t.equal(line?.mode, 'authz', 'logged with mode authz')
      t.equal(line?.method, 'GET', 'the original method')
      t.equal(line?.path, '/api/v1/users', 'the original path, without the query')
      t.equal(line?.key_id, alice.id)
      t.equal(line?.reason, 'allowed')
      t.equal((await gw.logOf(botRes))?.method, 'DELETE')
    })
  }
})

t.test('an allowed decision reads the same whether its key came from Redis or from the cache: headers, their order, the log line', async (t) => {
  const volatile = new Set(['date', 'x-request-id', 'traceparent'])
  const shapeOf = (res: RawResponse): Array<[string, string]> => res.rawHeaders.map(([n, v]) => [n, volatile.has(n.toLowerCase()) ? '(varies)' : v])
  const lineOf = (line: Record<string, unknown> | undefined): Record<string, unknown> => {
    const { time: _time, req_id: _id, trace_id: _trace, latency_ms: latency, ...rest } = line ?? {}
    return { ...rest, latency: typeof latency }
  }
  for (const shape of SHAPES) {
    await t.test(shape, async (t) => {
      const alice = await gw.fixtures.personalKey('alice')
      const bot = await gw.fixtures.botKey('orgreader', 'globex')
      for (const [key, method, target] of [[alice.key, 'GET', '/api/v1/users?page=2'], [bot.key, 'DELETE', '/api/v1/orgs/globex/projects/1']] as const) {
        const fromRedis = await decide(gw, shape, method, target, key)
        const cached = await decide(gw, shape, method, target, key)
        t.equal(fromRedis.status, 200)
        t.same(shapeOf(cached), shapeOf(fromRedis), `${method}: the same headers, in the same order`)
        t.equal(cached.headers['content-length'], '0', 'Content-Length: 0')
        t.equal(cached.body, '', 'empty body')
        t.not(cached.headers['x-request-id'], fromRedis.headers['x-request-id'], 'a request id of its own')
        t.match(cached.headers['traceparent'], /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
        const [a, b] = [await gw.logOf(fromRedis), await gw.logOf(cached)]
        t.ok(b !== undefined, 'the cached decision is logged under its X-Request-Id')
        t.same(lineOf(b), lineOf(a), `${method}: the same log line`)
        t.equal(b?.trace_id, cached.headers['traceparent']?.split('-')[1], 'its trace id is the one forwarded')
      }
    })
  }
})

t.test('refused: the data plane\'s status, error object and challenge, in each shape', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const carol = await gw.fixtures.personalKey('carol')
  const revoked = await gw.fixtures.personalKey('bob')
  await gw.client.hset(`${gw.prefix}key:${revoked.id}`, 'status', 'revoked')
  const forged = alice.key.slice(0, -3) + (alice.key.endsWith('AAA') ? 'BBB' : 'AAA')

  const cases: Array<[string, string, string, string | undefined, Array<[string, string]>, number, string]> = [
    ['no credential', 'GET', '/api/v1/users', undefined, [], 401, 'missing_credential'],
    ['another scheme', 'GET', '/api/v1/users', undefined, [['Authorization', 'Basic YTpi']], 401, 'missing_credential'],
    ['two credentials', 'GET', '/api/v1/users', alice.key, [['Authorization', `Bearer ${alice.key}`]], 401, 'malformed_credential'],
    ['a bad checksum', 'GET', '/api/v1/users', forged, [], 401, 'bad_checksum'],
    ['a revoked key', 'GET', '/api/v1/users', revoked.key, [], 401, 'key_revoked'],
    ['a missing permission (scope in the challenge)', 'POST', '/api/v1/users', alice.key, [], 403, 'missing_permission'],
    ['another org', 'GET', '/api/v1/orgs/acme/x', carol.key, [], 403, 'org_mismatch'],
    ['no route prefix', 'GET', '/other/users', alice.key, [], 404, 'no_route'],
    ['a bad path', 'GET', '/api/v1/../users', alice.key, [], 400, 'bad_path'],
    ['no credential on a bad path: 400 first', 'GET', '/api/v1/%2e%2e/users', undefined, [], 400, 'bad_path']
  ]
  for (const [name, method, target, key, extra, status, reason] of cases) {
    await t.test(name, async (t) => {
      const headers: Array<[string, string]> = key === undefined ? [...extra] : [['Authorization', `Bearer ${key}`], ...extra]
      const data = await rawRequest(gw.port, Buffer.from(`${method} ${target} HTTP/1.1\r\nHost: x\r\n${headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}Connection: close\r\n\r\n`))
      t.equal(data.status, status, 'control: the data plane answers this')
      for (const shape of SHAPES) {
        const res = await decide(gw, shape, method, target, key, extra)
        sameAnswer(t, res, data, shape)
        t.equal(res.headers['x-auth-key-id'], undefined, `${shape}: no identity header on a refusal`)
        const line = await gw.logOf(res)
        t.equal(line?.reason, reason, `${shape}: logged reason ${reason}`)
        t.equal(line?.mode, 'authz')
      }
    })
  }
})

t.test('the path policy, inside X-Forwarded-Uri, X-Original-URI and as Envoy\'s own target', async (t) => {
  const { key } = await gw.fixtures.botKey('admin', 'acme')
  const control = await decide(gw, 'traefik', 'GET', '/api/v1/x', key)
  t.equal(control.status, 200, 'control: a clean path under the catch-all rule is allowed')

  for (const [name, method, target] of REFUSED_TARGETS) {
    await t.test(`${name}: ${JSON.stringify(target.toString())}`, async (t) => {
      for (const shape of SHAPES) {
        const res = await decide(gw, shape, method, target, key)
        t.equal(res.status, 400, `${shape}: 400`)
        t.same(JSON.parse(res.body), { error: { code: 'bad_request', message: 'Malformed request', status: 400 } }, `${shape}: the catalogue body`)
        t.equal(res.headers['x-auth-key-id'], undefined, `${shape}: no identity`)
      }
    })
  }
  for (const [name, target, decided] of ACCEPTED_TARGETS) {
    await t.test(`accepted, ${name}: ${target}`, async (t) => {
      for (const shape of SHAPES) {
        const res = await decide(gw, shape, 'GET', target, key)
        t.equal(res.status, 200, `${shape}: allowed`)
        t.equal((await gw.logOf(res))?.path, decided.split('?')[0], `${shape}: decided on the decoded path`)
      }
    })
  }
})

t.test('the rule decides on the decoded path, in the header too', async (t) => {
  const carol = await gw.fixtures.personalKey('carol')
  const alice = await gw.fixtures.personalKey('alice')
  for (const [name, target] of DECODED_RULE_TARGETS) {
    for (const shape of SHAPES) {
      t.equal((await decide(gw, shape, 'GET', target, carol.key)).status, 403, `${name}, ${shape}: without users:read, 403`)
      t.equal((await decide(gw, shape, 'GET', target, alice.key)).status, 200, `${name}, ${shape}: with users:read, 200`)
    }
  }
})

t.test('the original request is named exactly, or the answer is 400', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const auth: [string, string] = ['Authorization', `Bearer ${alice.key}`]
  const ask = async (lines: string): Promise<RawResponse> =>
    await rawRequest(gw.authzPort, Buffer.from(`GET /api/v1/users HTTP/1.1\r\nHost: k\r\n${auth[0]}: ${auth[1]}\r\n${lines}Connection: close\r\n\r\n`, 'latin1'))

  const bad: Array<[string, string]> = [
    ['X-Forwarded-Uri without X-Forwarded-Method', 'X-Forwarded-Uri: /api/v1/users\r\n'],
    ['X-Forwarded-Method without X-Forwarded-Uri', 'X-Forwarded-Method: GET\r\n'],
    ['X-Original-URI without X-Original-Method', 'X-Original-URI: /api/v1/users\r\n'],
    ['X-Forwarded-Uri twice', 'X-Forwarded-Method: GET\r\nX-Forwarded-Uri: /api/v1/open/x\r\nX-Forwarded-Uri: /api/v1/users\r\n'],
    ['X-Original-URI twice, in other cases', 'X-Original-Method: GET\r\nx-original-uri: /api/v1/open/x\r\nX-ORIGINAL-URI: /api/v1/users\r\n'],
    ['a method node would not admit', 'X-Forwarded-Method: FROB\r\nX-Forwarded-Uri: /api/v1/users\r\n'],
    ['a method in lower case', 'X-Forwarded-Method: get\r\nX-Forwarded-Uri: /api/v1/users\r\n'],
    ['an empty method', 'X-Forwarded-Method: \r\nX-Forwarded-Uri: /api/v1/users\r\n']
  ]
  for (const [name, lines] of bad) {
    const res = await ask(lines)
    t.equal(res.status, 400, `${name}: 400`)
    t.equal((await gw.logOf(res))?.reason, 'bad_request', `${name}: reason bad_request`)
  }

  // both pairs (authz.proxy auto): ambiguous, decided on neither (authorizer-proxy-headers.test.ts)
  const both = await ask('X-Forwarded-Method: POST\r\nX-Forwarded-Uri: /api/v1/users\r\nX-Original-Method: GET\r\nX-Original-URI: /api/v1/users\r\n')
  t.equal(both.status, 400, 'both pairs: 400')
})

t.test('Envoy: authz.path_prefix is removed; a target outside it is no decision (404)', async (t) => {
  const gw = await startGateway(t, { yaml: RULES + 'authz: { path_prefix: /ext-authz }\n' })
  const alice = await gw.fixtures.personalKey('alice')
  const envoy = async (method: string, target: string): Promise<RawResponse> =>
    await rawRequest(gw.authzPort, Buffer.from(`${method} ${target} HTTP/1.1\r\nHost: k\r\nAuthorization: Bearer ${alice.key}\r\nConnection: close\r\n\r\n`))
  t.equal((await envoy('GET', '/ext-authz/api/v1/users')).status, 200)
  t.equal((await envoy('POST', '/ext-authz/api/v1/users')).status, 403, 'the method is the request\'s own')
  t.equal((await envoy('GET', '/ext-authz/api/v1/../v1/users')).status, 400, 'the path policy on what follows the prefix')
  for (const target of ['/api/v1/users', '/ext-authzapi/v1/users', '/ext-authz', '/ext-authz?x=1', '/other/ext-authz/api/v1/users']) {
    const res = await envoy('GET', target)
    t.equal(res.status, 404, `${target}: 404`)
    t.equal((await gw.logOf(res))?.reason, 'no_route')
  }
  const traefik = await decide(gw, 'traefik', 'GET', '/api/v1/users', alice.key)
  t.equal(traefik.status, 200, 'the header shapes ignore the prefix')
})

t.test('an untrusted peer gets 403 untrusted_peer, whatever it sends', async (t) => {
  const gw = await startGateway(t, { yaml: RULES + 'authz: { trusted_peers: ["10.0.0.0/8", "fd00::/8"] }\n' })
  const alice = await gw.fixtures.personalKey('alice')
  for (const shape of SHAPES) {
    const res = await decide(gw, shape, 'GET', '/api/v1/users', alice.key)
    t.equal(res.status, 403, `${shape}: 403`)
    t.same(JSON.parse(res.body), { error: { code: 'forbidden', message: 'Insufficient permissions for this resource', status: 403 } })
    t.equal(res.headers['x-auth-key-id'], undefined, 'no identity')
    t.equal((await gw.logOf(res))?.reason, 'untrusted_peer')
  }
})

t.test('the cache and push invalidation are the data plane\'s: a revocation is seen at once', async (t) => {
  await gw.fixtures.user('dana', 'acme', 'reader')
  const dana = await gw.fixtures.personalKey('dana')
  t.equal((await decide(gw, 'nginx', 'GET', '/api/v1/users', dana.key)).status, 200)
  t.equal((await gw.get('/api/v1/users', dana.key)).status, 200, 'cached by either')
  await gw.client.hset(`${gw.prefix}user:dana`, 'status', 'deactivated')
  const deadline = Date.now() + 1000
  let status = 200
  while (status === 200 && Date.now() < deadline) {
    status = (await decide(gw, 'nginx', 'GET', '/api/v1/users', dana.key)).status
    if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20))
  }
  t.equal(status, 401, 'deactivating the user is a 401 within 1 s')
})

t.test('metrics: the same series, labelled by mode', async (t) => {
  const gw = await startGateway(t, { yaml: RULES }) // its own: it counts exact series
  const alice = await gw.fixtures.personalKey('alice')
  await decide(gw, 'traefik', 'GET', '/api/v1/users', alice.key)
  await decide(gw, 'traefik', 'GET', '/api/v1/users')
  await gw.get('/api/v1/users', alice.key)
  const text = (await gw.admin('GET', '/metrics')).body
  t.match(text, /keygate_requests_total\{mode="authz",rule="GET \/api\/v1\/users",status="200",status_class="2xx",reason="allowed"\} 1/)
  t.match(text, /keygate_requests_total\{mode="authz",rule="none",status="401",status_class="4xx",reason="missing_credential"\} 1/)
  t.match(text, /keygate_requests_total\{mode="proxy",rule="GET \/api\/v1\/users",status="200",status_class="2xx",reason="allowed"\} 1/)
  t.match(text, /keygate_request_duration_seconds_count\{mode="authz",rule="GET \/api\/v1\/users",status="200",status_class="2xx"\} 1/)
})

t.test('off unless authz_listen is set', async (t) => {
  const gw = await startGateway(t)
  t.equal(gw.app.authz, undefined)
})

t.test('with the assertion on: the 200 carries X-Auth-Assertion, verified with the JWK Set of the authorizer listener', async (t) => {
  const key = writeKeyFile('ES256')
  const gw = await startGateway(t, { yaml: RULES + 'identity: { assertion: { enabled: true } }\n', env: { KEYGATE_ASSERTION_KEY_FILE: key.file } })
  const alice = await gw.fixtures.personalKey('alice')
  const bot = await gw.fixtures.botKey('orgreader', 'globex')

  const jwks = await gw.authz('GET', '/.well-known/jwks.json')
  t.equal(jwks.status, 200, 'the JWK Set, on the authorizer listener too')
  t.same(JSON.parse(jwks.body), JSON.parse((await gw.admin('GET', '/.well-known/jwks.json')).body), 'the admin listener\'s')
  const keySet = createRemoteJWKSet(new URL(`http://127.0.0.1:${gw.authzPort}/.well-known/jwks.json`))

  for (const shape of SHAPES) {
    const res = await decide(gw, shape, 'HEAD', '/api/v1/%75sers?page=2', alice.key)
    t.equal(res.status, 200, `${shape}: allowed`)
    const token = res.headers['x-auth-assertion'] ?? ''
    const { payload } = await jwtVerify(token, keySet, { issuer: 'keygate', typ: 'JWT', algorithms: ['ES256'] })
    t.equal(payload.sub, 'alice', `${shape}: sub`)
    t.equal(payload.key_id, alice.id)
    t.equal(payload.htm, 'HEAD', `${shape}: htm is the original method`)
    t.equal(payload.htu, '/api/v1/%75sers', `${shape}: htu is the path the proxy named (and forwards), no query`)
    t.equal(payload.jti, res.headers['x-request-id'], `${shape}: jti is the answer's request id`)
    t.ok((payload.exp ?? 0) - (payload.iat ?? 0) <= 60, 'exp - iat <= ttl_s')
  }
  const botRes = await decide(gw, 'nginx', 'POST', '/api/v1/orgs/globex/x', bot.key)
  const { payload } = await jwtVerify(botRes.headers['x-auth-assertion'] ?? '', keySet, { issuer: 'keygate' })
  t.equal(payload.sub, `bot:${bot.id}`)
  t.equal(payload.key_type, 'bot')
  t.equal(payload.htm, 'POST')

  const refused = await decide(gw, 'traefik', 'POST', '/api/v1/users', alice.key)
  t.equal(refused.status, 403)
  t.equal(refused.headers['x-auth-assertion'], undefined, 'no assertion on a refusal')
  const named = await rawRequest(gw.authzPort, Buffer.from('GET /.well-known/jwks.json HTTP/1.1\r\nHost: k\r\nX-Original-Method: GET\r\nX-Original-URI: /api/v1/users\r\nConnection: close\r\n\r\n'))
  t.equal(named.status, 401, 'a request naming an original request is a decision, whatever its own path')
})

t.test('rate limits: the data plane\'s buckets, counted once per allowed decision, 429 with its headers', async (t) => {
  const gw = await startGateway(t, { yaml: RULES + 'rate_limits: { default: "3/1m" }\n' })
  const alice = await gw.fixtures.personalKey('alice')
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 200, 'one through the data plane')
  const second = await decide(gw, 'traefik', 'GET', '/api/v1/users', alice.key)
  t.equal(second.status, 200, 'one through the authorizer')
  t.equal(second.headers['ratelimit-limit'], '3')
  t.equal(second.headers['ratelimit-remaining'], '1', 'the same bucket')
  t.equal((await decide(gw, 'nginx', 'GET', '/api/v1/users', alice.key)).status, 200)
  const limited = await decide(gw, 'envoy', 'GET', '/api/v1/users', alice.key)
  t.equal(limited.status, 429)
  t.same(JSON.parse(limited.body), { error: { code: 'rate_limited', message: 'Too many requests', status: 429 } })
  t.ok(Number(limited.headers['retry-after']) >= 1, 'Retry-After')
  t.equal(limited.headers['x-auth-key-id'], undefined, 'no identity on a refusal')
  t.equal((await gw.logOf(limited))?.reason, 'rate_limited')
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 429, 'and the data plane is over it too')
  const forbidden = await decide(gw, 'traefik', 'POST', '/api/v1/users', alice.key)
  t.equal(forbidden.status, 403, 'a 403 is decided before the limits')
  t.equal(forbidden.headers['ratelimit-limit'], undefined, 'and consumes or reveals nothing')
})
