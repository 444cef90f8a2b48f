/**
 * The authorizer listener (docs/authorizer.md) with a real peer: Debian's nginx, with `auth_request`, runs the
 * configuration of docs/authorizer.md (read from that page, its addresses replaced by
 * the test's) in front of a recording upstream, and keygate's authorizer decides.
 * Allowed requests arrive with the identity headers; refused ones get keygate's own
 * status, error object and challenge through nginx; a revocation takes effect through
 * nginx within a second. Requests are sent over raw sockets.
 */
import t from 'tap'
import type { Test } from 'tap'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { writeKeyFile } from '../../helpers/assertion-keys.js'
import { checkRefusalsThrough } from '../../helpers/forward-auth.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { freePort } from '../../helpers/net.js'
import { nginxConfigFromDocs, startNginx, type Nginx } from '../../helpers/nginx.js'
import { send, type RawResponse } from '../../helpers/raw-http.js'

// the standard routes and rules of test/helpers/gateway.ts, and the authorizer listener
const RULES = 'authz_listen: "127.0.0.1:0"\n'

async function setup (t: Test, yaml = '', env: Record<string, string> = {}): Promise<{ gw: TestGateway, nginx: Nginx, via: (method: string, target: string, headers?: Record<string, string>, body?: string) => Promise<RawResponse> }> {
  const gw = await startGateway(t, { yaml: RULES + yaml, env })
  const port = await freePort()
  const nginx = await startNginx(t, nginxConfigFromDocs(gw.authzPort, gw.upstream.port, port), port)
  return { gw, nginx, via: async (method, target, headers = {}, body) => await send(port, method, target, { ...headers, Connection: 'close' }, body) }
}

t.test('allowed through nginx: the upstream receives the identity headers, never the key', async (t) => {
  const { gw, via } = await setup(t)
  const alice = await gw.fixtures.personalKey('alice')
  const before = gw.upstream.requests.length
  const res = await via('GET', '/api/v1/users?page=2', {
    Authorization: `Bearer ${alice.key}`,
    // a client's own identity and steering headers
    'X-Auth-User-Id': 'mallory',
    'X-Auth-Role': 'admin',
    'X-Auth-Env': 'test',
    'X-Auth-Assertion': 'forged',
    'X-Original-URI': '/api/v1/open',
    'X-Forwarded-Uri': '/api/v1/open'
  })
  t.equal(res.status, 200, 'forwarded')
  t.equal(gw.upstream.requests.length, before + 1, 'exactly one upstream request')
  const up = gw.upstream.last()
  t.equal(up?.url, '/api/v1/users?page=2', 'the target as the client sent it')
  t.equal(up?.headers['x-auth-key-id'], alice.id)
  t.equal(up?.headers['x-auth-key-type'], 'personal')
  t.equal(up?.headers['x-auth-user-id'], 'alice', 'keygate\'s user id, not the client\'s')
  t.equal(up?.headers['x-auth-org-id'], 'acme')
  t.equal(up?.headers['x-auth-role'], 'reader', 'keygate\'s role, not the client\'s')
  t.equal(up?.headers['x-auth-env'], 'live', 'keygate\'s environment, not the client\'s')
  t.equal(up?.headers.authorization, undefined, 'the key is not forwarded')
  t.equal(up?.headers['x-original-uri'], undefined, 'steering headers are not forwarded')
  t.equal(up?.headers['x-forwarded-uri'], undefined)
  t.equal(up?.headers['x-auth-assertion'], undefined, 'no assertion when it is off, and the client\'s own is removed')
  t.equal(res.headers['x-request-id'], up?.headers['x-request-id'], 'the client and the upstream see one request id')
  const line = await gw.logOf(res)
  t.equal(line?.mode, 'authz', 'the decision\'s')
  t.equal(line?.path, '/api/v1/users')

  const bot = await gw.fixtures.botKey('orgreader', 'globex')
  const post = await via('POST', '/api/v1/orgs/globex/items', { Authorization: `Bearer ${bot.key}`, 'Content-Type': 'application/json', 'X-Auth-User-Id': 'mallory' }, '{"n":1}')
  t.equal(post.status, 200, 'a BOT key, a request with a body')
  t.equal(gw.upstream.last()?.body.toString(), '{"n":1}', 'the body reaches the upstream intact')
  t.equal(gw.upstream.last()?.headers['x-auth-user-id'], undefined, 'a BOT key has no user: the client\'s copy is removed')
  t.equal(gw.upstream.last()?.headers['x-auth-role'], 'orgreader')
})

t.test('refused through nginx: keygate\'s status, error object and challenge; nothing forwarded', async (t) => {
  const { gw, via } = await setup(t)
  await checkRefusalsThrough(t, gw, via, {
    'no route prefix': 'no route prefix (nginx would make it a 500)',
    'a dot segment': 'a dot segment nginx itself would resolve (500 otherwise)'
  })
})

t.test('a revocation takes effect through nginx within 1 s', async (t) => {
  const { gw, via } = await setup(t)
  const bot = await gw.fixtures.botKey('reader', 'acme')
  t.equal((await via('GET', '/api/v1/users', { Authorization: `Bearer ${bot.key}` })).status, 200, 'allowed, and now cached')
  const revokedAt = Date.now()
  await gw.client.hset(`${gw.prefix}key:${bot.id}`, 'status', 'revoked')
  let status = 200
  while (status === 200 && Date.now() - revokedAt < 1000) {
    status = (await via('GET', '/api/v1/users', { Authorization: `Bearer ${bot.key}` })).status
  }
  t.equal(status, 401, 'refused within 1 s of the redis-cli edit')
})

t.test('Redis unreachable: an uncached key gets keygate\'s 503 through nginx (fail closed)', async (t) => {
  const { gw, via } = await setup(t)
  const alice = await gw.fixtures.personalKey('alice')
  await gw.redis.stop()
  const before = gw.upstream.requests.length
  const res = await via('GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })
  t.equal(res.status, 503)
  t.same(JSON.parse(res.body), { error: { code: 'service_unavailable', message: 'Authentication service unavailable', status: 503 } })
  t.equal(gw.upstream.requests.length, before, 'not forwarded')
})

t.test('keygate unreachable: nginx refuses (fail closed)', async (t) => {
  const { gw, via } = await setup(t)
  const alice = await gw.fixtures.personalKey('alice')
  await gw.app.authz?.close()
  const before = gw.upstream.requests.length
  const res = await via('GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })
  t.ok(res.status >= 500, `refused (${res.status})`)
  t.equal(gw.upstream.requests.length, before, 'not forwarded')
})

t.test('with the assertion on, the upstream behind nginx verifies who called, and what', async (t) => {
  const key = writeKeyFile('EdDSA')
  const { gw, via } = await setup(t, 'identity: { assertion: { enabled: true } }\n', { KEYGATE_ASSERTION_KEY_FILE: key.file })
  const alice = await gw.fixtures.personalKey('alice')
  const res = await via('GET', '/api/v1/users?page=2', { Authorization: `Bearer ${alice.key}`, 'X-Auth-Assertion': 'forged' })
  t.equal(res.status, 200)
  const up = gw.upstream.last()
  const token = String(up?.headers['x-auth-assertion'] ?? '')
  const keySet = createRemoteJWKSet(new URL(`http://127.0.0.1:${gw.adminPort}/.well-known/jwks.json`))
  const { payload } = await jwtVerify(token, keySet, { issuer: 'keygate', typ: 'JWT', algorithms: ['EdDSA'] })
  t.equal(payload.sub, 'alice')
  t.equal(payload.htm, up?.method, 'htm: the method the upstream received')
  t.equal(payload.htu, up?.url.split('?')[0], 'htu: the path the upstream received')
  t.equal(payload.jti, up?.headers['x-request-id'], 'jti: the request id the upstream received')
})

t.test('rate limits through nginx: RateLimit-* on allowed responses, keygate\'s 429 with Retry-After', async (t) => {
  const { gw, via } = await setup(t, 'rate_limits: { default: "3/1m" }\n')
  const alice = await gw.fixtures.personalKey('alice')
  const auth = { Authorization: `Bearer ${alice.key}` }
  for (let i = 1; i <= 3; i++) {
    const res = await via('GET', '/api/v1/users', auth)
    t.equal(res.status, 200, `request ${i}: allowed`)
    t.equal(res.headers['ratelimit-limit'], '3', `request ${i}: RateLimit-Limit, once`)
    t.equal(res.headers['ratelimit-remaining'], String(3 - i), `request ${i}: RateLimit-Remaining`)
  }
  const before = gw.upstream.requests.length
  const limited = await via('GET', '/api/v1/users', auth)
  t.equal(limited.status, 429, 'the fourth: 429 through nginx, not nginx\'s 500')
  t.same(JSON.parse(limited.body), { error: { code: 'rate_limited', message: 'Too many requests', status: 429 } })
  t.ok(Number(limited.headers['retry-after']) >= 1, 'Retry-After, at least 1 s')
  t.equal(limited.headers['ratelimit-remaining'], '0')
  t.equal(gw.upstream.requests.length, before, 'not forwarded')
  const noKey = await via('GET', '/api/v1/users')
  t.equal(noKey.status, 401)
  t.equal(noKey.headers['ratelimit-limit'], undefined, 'a 401 reveals no limit')
})
