/**
 * Which request the authorizer decides on, by `authz.proxy`: a named proxy's own way of
 * naming the original request is the only one read, and `auto` refuses a decision
 * request that carries two ways (any one header of a pair counts), so a client's own
 * copy of another proxy's pair, passed on by nginx or Caddy, can never choose the path
 * that is decided. The log line names the way used (`via`). Decision requests go over
 * raw sockets, each header as written.
 */
import t from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import type { RawResponse } from '../../helpers/raw-http.js'

const RULES = `
authz_listen: "127.0.0.1:0"
rules:
  - { method: GET,  path: /api/v1/users, permissions: [users:read] }
  - { method: POST, path: /api/v1/users, permissions: [users:write] }
  - { method: "*",  path: /api/v1/*,     permissions: [] }
`
type H = Array<[string, string]>
// what nginx sends for a client's `POST /api/v1/users` (alice may not: users:write)
const NGINX_PAIR: H = [['X-Original-Method', 'POST'], ['X-Original-URI', '/api/v1/users']]
// a client's own copy of Traefik's pair, naming a request alice may make
const CLIENT_TRAEFIK_PAIR: H = [['X-Forwarded-Method', 'GET'], ['X-Forwarded-Uri', '/api/v1/users']]

async function ask (gw: TestGateway, key: string, headers: H, method = 'GET', target = '/_keygate'): Promise<RawResponse> {
  return await gw.authz(method, target, [['Authorization', `Bearer ${key}`], ...headers])
}

t.test('auto (the default): a request carrying both pairs is ambiguous: 400, never the client\'s path', async (t) => {
  const gw = await startGateway(t, { yaml: RULES })
  t.equal(gw.config.authz.proxy, 'auto', 'auto is the default')
  const alice = await gw.fixtures.personalKey('alice')
  const cases: Array<[string, H]> = [
    ['the whole Traefik pair beside nginx\'s', [...NGINX_PAIR, ...CLIENT_TRAEFIK_PAIR]],
    ['the Traefik pair first', [...CLIENT_TRAEFIK_PAIR, ...NGINX_PAIR]],
    ['X-Forwarded-Uri alone beside nginx\'s pair', [...NGINX_PAIR, ['X-Forwarded-Uri', '/api/v1/users']]],
    ['X-Forwarded-Method alone beside nginx\'s pair', [...NGINX_PAIR, ['x-forwarded-method', 'GET']]],
    ['an empty X-Forwarded-Uri beside nginx\'s pair', [...NGINX_PAIR, ['X-Forwarded-Uri', '']]],
    ['X-Original-URI alone beside Traefik\'s pair', [...CLIENT_TRAEFIK_PAIR, ['X-Original-URI', '/api/v1/users']]]
  ]
  for (const [name, headers] of cases) {
    const res = await ask(gw, alice.key, headers)
    t.equal(res.status, 400, `${name}: 400`)
    t.equal((JSON.parse(res.body) as { error: { code: string } }).error.code, 'bad_request', `${name}: keygate's error object`)
    const line = await gw.logOf(res)
    t.equal(line?.reason, 'bad_request', `${name}: reason`)
    t.equal(line?.via, 'ambiguous', `${name}: the log names it ambiguous`)
  }
  // each way alone is read, and logged
  const ways: Array<[string, H, string, string, number]> = [
    ['nginx', NGINX_PAIR, 'GET', '/_keygate', 403],
    ['traefik', CLIENT_TRAEFIK_PAIR, 'GET', '/', 200],
    ['envoy', [], 'POST', '/api/v1/users', 403]
  ]
  for (const [via, headers, method, target, status] of ways) {
    const res = await ask(gw, alice.key, headers, method, target)
    t.equal(res.status, status, `${via} alone: ${status}`)
    t.equal((await gw.logOf(res))?.via, via, `${via} alone: logged as via ${via}`)
  }
})

t.test('authz.proxy: nginx reads only X-Original-*; a client\'s Traefik pair is ignored', async (t) => {
  const gw = await startGateway(t, { yaml: RULES + 'authz: { proxy: nginx }\n' })
  const alice = await gw.fixtures.personalKey('alice')
  for (const headers of [[...CLIENT_TRAEFIK_PAIR, ...NGINX_PAIR], [...NGINX_PAIR, ...CLIENT_TRAEFIK_PAIR]]) {
    const res = await ask(gw, alice.key, headers)
    t.equal(res.status, 403, 'decided on nginx\'s POST /api/v1/users: missing users:write')
    const line = await gw.logOf(res)
    t.equal(line?.via, 'nginx')
    t.equal(line?.method, 'POST')
  }
  t.equal((await ask(gw, alice.key, CLIENT_TRAEFIK_PAIR)).status, 400, 'without nginx\'s pair: 400, not Traefik\'s')
  t.equal((await ask(gw, alice.key, [], 'GET', '/api/v1/users')).status, 400, 'nor the request\'s own target')
})

t.test('authz.proxy: traefik reads only X-Forwarded-*', async (t) => {
  const gw = await startGateway(t, { yaml: RULES + 'authz: { proxy: traefik }\n' })
  const alice = await gw.fixtures.personalKey('alice')
  const traefikPost: H = [['X-Forwarded-Method', 'POST'], ['X-Forwarded-Uri', '/api/v1/users']]
  const res = await ask(gw, alice.key, [...traefikPost, ['X-Original-Method', 'GET'], ['X-Original-URI', '/api/v1/users']], 'GET', '/')
  t.equal(res.status, 403, 'decided on Traefik\'s POST, whatever the X-Original-* pair says')
  t.equal((await gw.logOf(res))?.via, 'traefik')
  t.equal((await ask(gw, alice.key, [['X-Original-Method', 'GET'], ['X-Original-URI', '/api/v1/users']], 'GET', '/')).status, 400, 'without Traefik\'s pair: 400')
})

t.test('authz.proxy: envoy reads only the request\'s own method and target', async (t) => {
  const gw = await startGateway(t, { yaml: RULES + 'authz: { proxy: envoy, path_prefix: /ext-authz }\n' })
  const alice = await gw.fixtures.personalKey('alice')
  const res = await ask(gw, alice.key, [...CLIENT_TRAEFIK_PAIR, ['X-Original-Method', 'GET'], ['X-Original-URI', '/api/v1/users']], 'POST', '/ext-authz/api/v1/users')
  t.equal(res.status, 403, 'decided on its own POST /api/v1/users, whatever the pairs say')
  t.equal((await gw.logOf(res))?.via, 'envoy')
  t.equal((await ask(gw, alice.key, NGINX_PAIR, 'GET', '/ext-authz/api/v1/users')).status, 200, 'its own GET')
})

t.test('the allowed answer tells Envoy to remove the key and the identity headers it does not set', async (t) => {
  const gw = await startGateway(t, { yaml: RULES })
  const alice = await gw.fixtures.personalKey('alice')
  const bot = await gw.fixtures.botKey('reader', 'acme')
  const personal = await ask(gw, alice.key, [], 'GET', '/api/v1/users')
  t.equal(personal.status, 200)
  t.equal(personal.headers['x-envoy-auth-headers-to-remove'], 'authorization,x-auth-assertion,x-auth-identity,x-auth-meta', 'the key, the assertion (off), the identity and meta (unset)')
  const botRes = await ask(gw, bot.key, [], 'GET', '/api/v1/users')
  t.equal(botRes.status, 200)
  t.equal(botRes.headers['x-envoy-auth-headers-to-remove'], 'authorization,x-auth-assertion,x-auth-user-id,x-auth-identity,x-auth-meta', 'a BOT key sets no user id: a client\'s copy goes')
  const refused = await ask(gw, alice.key, [], 'POST', '/api/v1/users')
  t.equal(refused.status, 403)
  t.equal(refused.headers['x-envoy-auth-headers-to-remove'], undefined, 'a refusal forwards nothing')
})
