/**
 * The authorizer behind a real Caddy (Debian's package): `forward_auth` runs the site
 * block of docs/authorizer.md (read from that page, its addresses replaced by the
 * test's, with the admin endpoint off) in front of a recording upstream. Allowed
 * requests reach the upstream with keygate's identity and never the key nor a client's
 * own identity headers; refused ones get keygate's own status, error object and
 * challenge; path attacks and a client's own copy of nginx's pair decide nothing the
 * client chose; a random X-Forwarded-For buys no budget of unknown keys; a revocation
 * takes effect through Caddy within a second. Requests are sent over raw sockets.
 */
import t from 'tap'
import type { Test } from 'tap'
import { assembleKey } from '../../../src/registry/key-format.js'
import { caddyConfigFromDocs, startCaddy } from '../../helpers/caddy.js'
import { checkRefusalsThrough } from '../../helpers/forward-auth.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { freePort } from '../../helpers/net.js'
import { send, type RawResponse } from '../../helpers/raw-http.js'

// Caddy names the original request as Traefik does
const RULES = 'authz_listen: "127.0.0.1:0"\n'
const PROXY = 'authz: { proxy: traefik }\n'
type Via = (method: string, target: string, headers?: Record<string, string>, body?: string) => Promise<RawResponse>

async function setup (t: Test, yaml = PROXY, edit: (conf: string) => string = (c) => c): Promise<{ gw: TestGateway, via: Via }> {
  const gw = await startGateway(t, { yaml: RULES + yaml })
  const port = await freePort()
  await startCaddy(t, edit(caddyConfigFromDocs(gw.authzPort, gw.upstream.port, port)), port)
  return { gw, via: async (method, target, headers = {}, body) => await send(port, method, target, { ...headers, Connection: 'close' }, body) }
}

t.test('allowed through Caddy: the identity headers at the upstream, never the key nor a client\'s own identity', async (t) => {
  const { gw, via } = await setup(t)
  const alice = await gw.fixtures.personalKey('alice')
  const before = gw.upstream.requests.length
  const res = await via('GET', '/api/v1/users?page=2', {
    Authorization: `Bearer ${alice.key}`,
    'X-Auth-User-Id': 'mallory',
    'X-Auth-Role': 'admin',
    'X-Auth-Env': 'test',
    'X-Auth-Admin': 'true',
    'X-Auth-Assertion': 'forged',
    'X-Request-Id': 'chosen-by-client'
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
  t.notOk(up?.headers['x-auth-admin'], 'another identity-prefixed header of the client\'s is removed')
  t.notOk(up?.headers['x-auth-assertion'], 'no assertion when it is off, and the client\'s own is removed')
  const line = await gw.logOf(res)
  t.equal(line?.mode, 'authz', 'decided by the authorizer')
  t.equal(line?.via, 'traefik', 'named in Caddy\'s X-Forwarded-* pair')
  t.equal(up?.headers['x-request-id'], line?.req_id, 'the upstream gets the decision\'s request id, not the client\'s')
  t.equal(res.headers['x-request-id'], line?.req_id, 'and so does the client')

  const bot = await gw.fixtures.botKey('orgreader', 'globex')
  const post = await via('POST', '/api/v1/orgs/globex/items', { Authorization: `Bearer ${bot.key}`, 'Content-Type': 'application/json', 'X-Auth-User-Id': 'mallory' }, '{"n":1}')
  t.equal(post.status, 200, 'a BOT key, a request with a body')
  t.equal(gw.upstream.last()?.body.toString(), '{"n":1}', 'the body reaches the upstream intact')
  t.notOk(gw.upstream.last()?.headers['x-auth-user-id'], 'a BOT key has no user: the client\'s copy is removed')
  t.equal(gw.upstream.last()?.headers['x-auth-role'], 'orgreader')
  t.equal(gw.upstream.last()?.headers.authorization, undefined, 'the key is not forwarded')
})

t.test('refused through Caddy: keygate\'s status, error object and challenge; nothing forwarded', async (t) => {
  const { gw, via } = await setup(t)
  await checkRefusalsThrough(t, gw, via, {}, (alice) => [
    ['an encoded slash', 'GET', '/api/v1/open%2F..%2Fusers', { Authorization: alice }, 400, 'bad_request', undefined]
  ])
})

// alice (users:read) asks for POST /api/v1/users (users:write), naming GET in nginx's pair
const SPOOFED_PAIR = { 'X-Original-Method': 'GET', 'X-Original-URI': '/api/v1/users' }

t.test('a client\'s own copy of nginx\'s pair through Caddy never chooses the path decided', async (t) => {
  await t.test('the documented block, authz.proxy traefik', async (t) => {
    const { gw, via } = await setup(t)
    const alice = await gw.fixtures.personalKey('alice')
    const before = gw.upstream.requests.length
    const res = await via('POST', '/api/v1/users', { Authorization: `Bearer ${alice.key}`, ...SPOOFED_PAIR })
    t.equal(res.status, 403, 'decided on Caddy\'s POST: missing users:write')
    t.equal(gw.upstream.requests.length, before, 'not forwarded')
  })
  await t.test('a block that passes the pair on, authz.proxy auto: ambiguous, 400', async (t) => {
    const { gw, via } = await setup(t, '', (conf) => {
      const out = conf.replace(/^\s*request_header -X-Original-(Method|URI)\n/gm, '')
      if (out === conf) throw new Error('docs/authorizer.md\'s caddy block no longer removes X-Original-*')
      return out
    })
    const alice = await gw.fixtures.personalKey('alice')
    const before = gw.upstream.requests.length
    const res = await via('POST', '/api/v1/users', { Authorization: `Bearer ${alice.key}`, ...SPOOFED_PAIR })
    t.equal(res.status, 400, 'both pairs reached keygate: 400, not the 200 of the GET the client named')
    t.equal((JSON.parse(res.body) as { error: { code: string } }).error.code, 'bad_request')
    t.equal(gw.upstream.requests.length, before, 'not forwarded')
    t.equal((await gw.logOf(res))?.via, 'ambiguous')
  })
})

t.test('a random X-Forwarded-For per request through Caddy: forged keys refused once the budget is spent', async (t) => {
  const BURST = 5
  const { gw, via } = await setup(t, PROXY + `limits: { unknown_keys_per_peer: { per_second: 0.01, burst: ${BURST} } }\n`)
  const reasons: string[] = []
  for (let n = 0; n < 3 * BURST; n++) {
    const key = assembleKey(gw.config.keys.prefix, ('C' + n.toString(36).padStart(15, '0')).slice(0, 16), 'S'.repeat(32))
    const res = await via('GET', '/api/v1/users', { Authorization: `Bearer ${key}`, 'X-Forwarded-For': `198.51.100.${n}` })
    t.equal(res.status, 401, `forged key ${n}: 401`)
    reasons.push(String((await gw.logOf(res))?.reason))
  }
  t.same(reasons.slice(BURST), Array(2 * BURST).fill('unknown_key_limited'), `refused without a lookup after the budget (${reasons.join(',')})`)
})

t.test('a revocation takes effect through Caddy within 1 s', async (t) => {
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

t.test('keygate unreachable: Caddy refuses (fail closed)', async (t) => {
  const { gw, via } = await setup(t)
  const alice = await gw.fixtures.personalKey('alice')
  await gw.app.authz?.close()
  const before = gw.upstream.requests.length
  const res = await via('GET', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })
  t.ok(res.status >= 500, `refused (${res.status})`)
  t.equal(gw.upstream.requests.length, before, 'not forwarded')
})
