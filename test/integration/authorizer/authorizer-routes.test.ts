/**
 * The authorizer listener and routes (docs/routing.md, docs/authorizer.md): public rules
 * answer 200 without a key (`X-Auth-Anonymous: true`, every identity header for Envoy to
 * remove), a key on a public path is decided, a route's key header is a credential
 * (and one for the proxy to remove), both credentials are 401, and routes with hosts
 * are chosen by the original request's host (`X-Forwarded-Host`, else `Host`).
 */
import t from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { rawRequest, type RawResponse } from '../../helpers/raw-http.js'

let gw: TestGateway
t.before(async () => {
  gw = await startGateway(t, {
    yaml: `
authz_listen: "127.0.0.1:0"
routes:
  - { prefix: /api/v1, upstream: core }
  - { prefix: /kong, upstream: core, key_header: X-API-Key }
  - { prefix: /shop, upstream: core, hosts: [shop.example.com] }
rules:
  - { method: GET, path: /api/v1/health, public: true }
  - { method: "*", path: /api/v1/*, permissions: [] }
  - { method: "*", path: /kong/*, permissions: [] }
  - { method: "*", path: /shop/*, permissions: [] }
`
  })
})

/** A Traefik-shaped decision request about GET `uri`. */
async function decide (uri: string, headers: Array<[string, string]> = []): Promise<RawResponse> {
  const head = [['Host', 'keygate'], ['X-Forwarded-Method', 'GET'], ['X-Forwarded-Uri', uri], ...headers, ['Connection', 'close']]
  return await rawRequest(gw.authzPort, `GET / HTTP/1.1\r\n${head.map(([n, v]) => `${n ?? ''}: ${v ?? ''}\r\n`).join('')}\r\n`)
}

function removed (res: RawResponse): string[] {
  return (res.headers['x-envoy-auth-headers-to-remove'] ?? '').split(',')
}

t.test('a public rule without a key: 200, anonymous, every identity header to remove', async (t) => {
  const res = await decide('/api/v1/health', [['X-Auth-User-Id', 'admin']])
  t.equal(res.status, 200)
  t.equal(res.headers['x-auth-anonymous'], 'true')
  t.equal(res.headers['x-auth-key-id'], undefined, 'no identity')
  t.equal(res.headers['x-auth-user-id'], undefined, 'the client\'s copy is not echoed')
  for (const name of ['authorization', 'x-auth-key-id', 'x-auth-user-id', 'x-auth-org-id', 'x-auth-role', 'x-auth-key-type']) {
    t.ok(removed(res).includes(name), `Envoy removes ${name}`)
  }
  const line = await gw.logOf(res)
  t.equal(line?.reason, 'public')
  t.equal(line?.mode, 'authz')
})

t.test('a key on a public path is decided: a bad one 401, a good one its identity', async (t) => {
  t.equal((await decide('/api/v1/health', [['Authorization', 'Bearer not-a-key']])).status, 401)
  const { key, id } = await gw.fixtures.botKey('admin', 'acme')
  const res = await decide('/api/v1/health', [['Authorization', `Bearer ${key}`]])
  t.equal(res.status, 200)
  t.equal(res.headers['x-auth-key-id'], id)
  t.equal(res.headers['x-auth-anonymous'], undefined)
})

t.test('not public: 401 without a key', async (t) => {
  t.equal((await decide('/api/v1/other')).status, 401)
})

t.test('key_header: a credential, removed by the proxy; both at once 401', async (t) => {
  const { key, id } = await gw.fixtures.botKey('admin', 'acme')
  const ok = await decide('/kong/items', [['X-API-Key', key]])
  t.equal(ok.status, 200)
  t.equal(ok.headers['x-auth-key-id'], id)
  t.ok(removed(ok).includes('x-api-key'), 'Envoy removes the key header')
  t.ok(removed(ok).includes('authorization'), 'and Authorization')
  const both = await decide('/kong/items', [['X-API-Key', key], ['Authorization', `Bearer ${key}`]])
  t.equal(both.status, 401)
  t.equal((await gw.logOf(both))?.reason, 'two_credentials')
  t.equal((await decide(`/kong/items?x-api-key=${key}`)).status, 401, 'never from the query string')
  t.equal((await decide('/api/v1/items', [['X-API-Key', key]])).status, 401, 'not on a route without it')
  t.notOk(gw.rawLogs.some((l) => l.includes(key)), 'the key is in no log line')
})

t.test('hosts: the original host picks the route', async (t) => {
  const { key } = await gw.fixtures.botKey('admin', 'acme')
  const auth: [string, string] = ['Authorization', `Bearer ${key}`]
  t.equal((await decide('/shop/x', [auth, ['X-Forwarded-Host', 'shop.example.com']])).status, 200, 'X-Forwarded-Host')
  t.equal((await decide('/shop/x', [auth, ['X-Forwarded-Host', 'other.example.com']])).status, 404, 'another host')
  t.equal((await decide('/shop/x', [auth])).status, 404, 'the decision request\'s own Host names no route')
})
