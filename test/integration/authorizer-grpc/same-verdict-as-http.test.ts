/**
 * The gRPC and the HTTP authorizer are one decision (docs/authorizer-grpc.md): for every
 * row of this table, one original request is asked of the HTTP authorizer in Envoy's
 * shape (its own method and target, over a raw socket) and of the gRPC authorizer as
 * Envoy's CheckRequest, on one gateway, and both answers must agree: the HTTP status,
 * the error object, the challenge, the identity headers and the request headers to
 * remove. The rows: credentials in every state, rules, routes, a public rule, and the
 * whole path-policy suite (test/helpers/path-cases.ts).
 */
import t from 'tap'
import { authzClient, type AuthzClient } from '../../helpers/grpc-authz.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { ACCEPTED_TARGETS, DECODED_RULE_TARGETS, REFUSED_TARGETS } from '../../helpers/path-cases.js'
import { rawRequest } from '../../helpers/raw-http.js'

const YAML = `
authz_listen: "127.0.0.1:0"
authz_grpc_listen: "127.0.0.1:0"
rules:
  - { method: GET,  path: /api/v1/users,        permissions: [users:read] }
  - { method: POST, path: /api/v1/users,        permissions: [users:write] }
  - { method: "*",  path: /api/v1/orgs/:org/*,  permissions: [orgs:read], org_param: org }
  - { method: GET,  path: /api/v1/public/*,     public: true }
  - { method: GET,  path: /api/v1/*,            permissions: [] }
`

/** [what, method, target, the Authorization header (undefined: none), the HTTP status expected] */
type Row = [string, string, string, string | undefined, number]

// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/

let gw: TestGateway
let grpc: AuthzClient

t.before(async () => {
  gw = await startGateway(t, { yaml: YAML })
  grpc = authzClient(t, gw.authzGrpcPort)
})

async function rows (): Promise<Row[]> {
  const f = gw.fixtures
  await f.role('flip', ['users:read'])
  await f.user('dave', 'acme', 'flip')
  const alice = (await f.personalKey('alice')).key
  const bob = (await f.personalKey('bob')).key
  const carol = (await f.personalKey('carol')).key
  const bot = (await f.botKey('orgreader', 'globex')).key
  const revoked = await f.personalKey('alice')
  await f.hset(f.keys.key(revoked.id), 'status', 'revoked')
  const expired = (await f.personalKey('alice', { expiresInMs: 1 })).key
  const dave = (await f.personalKey('dave')).key
  await f.hset(f.keys.user('dave'), 'status', 'deactivated')
  await new Promise((resolve) => setTimeout(resolve, 20))
  const unknown = alice.slice(0, -6) + (alice.endsWith('AAAAAA') ? 'BBBBBB' : 'AAAAAA')
  const b = (key: string): string => `Bearer ${key}`

  const table: Row[] = [
    ['a personal key, its permission', 'GET', '/api/v1/users', b(alice), 200],
    ['a writer reads (users:*)', 'GET', '/api/v1/users', b(bob), 200],
    ['a writer writes', 'POST', '/api/v1/users', b(bob), 200],
    ['a reader writes', 'POST', '/api/v1/users', b(alice), 403],
    ['another org\'s role', 'GET', '/api/v1/users', b(carol), 403],
    ['a bot key in its org', 'GET', '/api/v1/orgs/globex/projects', b(bot), 200],
    ['a bot key in another org', 'GET', '/api/v1/orgs/acme/projects', b(bot), 403],
    ['a bot key, any method in its org', 'DELETE', '/api/v1/orgs/globex/projects/1', b(bot), 200],
    ['a rule with no permission', 'GET', '/api/v1/open/x', b(alice), 200],
    ['no rule for the method', 'DELETE', '/api/v1/users', b(bob), 403],
    ['a revoked key', 'GET', '/api/v1/users', b(revoked.key), 401],
    ['an expired key', 'GET', '/api/v1/users', b(expired), 401],
    ['a deactivated user\'s key', 'GET', '/api/v1/users', b(dave), 401],
    ['an unknown key', 'GET', '/api/v1/users', b(unknown), 401],
    ['a malformed key', 'GET', '/api/v1/users', 'Bearer kg_nope', 401],
    ['not a key at all', 'GET', '/api/v1/users', 'Bearer hello', 401],
    ['another scheme', 'GET', '/api/v1/users', 'Basic YWxpY2U6c2VjcmV0', 401],
    ['an empty Bearer', 'GET', '/api/v1/users', 'Bearer ', 401],
    ['no key', 'GET', '/api/v1/users', undefined, 401],
    ['a public rule, no key', 'GET', '/api/v1/public/page', undefined, 200],
    ['a public rule, with a key', 'GET', '/api/v1/public/page', b(alice), 200],
    ['a public rule, a bad key', 'GET', '/api/v1/public/page', 'Bearer kg_nope', 401],
    ['no route', 'GET', '/elsewhere', b(alice), 404],
    ['the route prefix alone: no rule', 'GET', '/api/v1', b(alice), 403],
    ['a query string', 'GET', '/api/v1/users?page=2&next=/../x', b(alice), 200],
    ['HEAD under a GET rule', 'HEAD', '/api/v1/open/x', b(alice), 200],
    ['a method no rule names', 'PATCH', '/api/v1/open/x', b(alice), 403]
  ]
  for (const [what, method, target] of REFUSED_TARGETS) {
    const text = typeof target === 'string' ? target : target.toString('latin1')
    // (bytes no HTTP/2 header may carry never reach an ext_authz service: the last test)
    if (CONTROL.test(text)) continue
    table.push([`path policy: ${what}`, method, text, b(alice), 400])
  }
  for (const [what, target] of ACCEPTED_TARGETS) table.push([`accepted: ${what}`, 'GET', target, b(alice), 200])
  for (const [what, target] of DECODED_RULE_TARGETS) table.push([`decoded for the rule: ${what}`, 'GET', target, b(alice), 200])
  return table
}

t.test('the HTTP and the gRPC authorizer give the same verdict, row by row', async (t) => {
  const table = await rows()
  t.ok(table.length >= 30, `${table.length} rows`)
  for (const [what, method, target, authorization, expected] of table) {
    const headers = authorization === undefined ? '' : `Authorization: ${authorization}\r\n`
    const raw = Buffer.concat([
      Buffer.from(`${method} `, 'latin1'), Buffer.from(target, 'latin1'),
      Buffer.from(` HTTP/1.1\r\nHost: api.example\r\n${headers}Connection: close\r\n\r\n`, 'latin1')
    ])
    const http = await rawRequest(gw.authzPort, raw)
    const rpc = await grpc.check(method, target, undefined, {
      headers: authorization === undefined ? {} : { authorization }
    })
    t.equal(http.status, expected, `${what}: HTTP authorizer ${expected}`)
    t.equal(rpc.httpStatus, http.status, `${what}: the same status`)
    t.equal(rpc.body, http.body, `${what}: the same body`)
    t.equal(rpc.headers['www-authenticate'], http.headers['www-authenticate'], `${what}: the same challenge`)
    t.equal(rpc.code === 0, http.status === 200, `${what}: OK exactly when allowed`)
    for (const name of ['x-auth-key-id', 'x-auth-user-id', 'x-auth-org-id', 'x-auth-role', 'x-auth-anonymous']) {
      t.equal(rpc.headers[name], http.headers[name], `${what}: the same ${name}`)
    }
    if (http.status === 200) {
      t.same(rpc.remove, (http.headers['x-envoy-auth-headers-to-remove'] ?? '').split(','), `${what}: the same removals`)
    }
  }
})

t.test('a target with control characters, which no HTTP/2 request carries: 400 all the same', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  for (const [what, method, target] of REFUSED_TARGETS) {
    const text = typeof target === 'string' ? target : target.toString('latin1')
    if (!CONTROL.test(text)) continue
    const rpc = await grpc.check(method, text, alice.key)
    t.equal(rpc.code, 3, `${what}: INVALID_ARGUMENT`)
    t.equal(rpc.httpStatus, 400, `${what}: 400`)
  }
})
