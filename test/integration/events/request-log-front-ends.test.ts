/**
 * Every front end records its decisions in the request log (docs/request-log.md): a
 * WebSocket upgrade (through a real ws upstream), the HTTP authorizer (nginx's shape,
 * raw sockets) and the gRPC authorizer (a real grpc-js client, Envoy's Check), each
 * allowed once and refused once, with a query string carrying a marker. Each decision is
 * read back from GET /admin/v1/keys/{id}/requests: method (the original request's),
 * path without its query, status, reason; the marker nowhere in the answer or in Redis.
 */
import t from 'tap'
import { adminCall, eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { authzClient } from '../../helpers/grpc-authz.js'
import { openClient, wsUpgrade } from '../../helpers/ws-client.js'
import { startWsUpstream } from '../../helpers/ws-upstream.js'

const TOKEN = 'request-log-front-ends-token-0123456789'
const Q = 'qmarker3d2a'

interface Logged { method: string, path: string, status: number, reason: string, client: string }

let gw: TestGateway
t.before(async () => {
  const up = await startWsUpstream()
  t.teardown(() => up.close())
  gw = await startGateway(t, {
    env: { KEYGATE_ADMIN_TOKEN: TOKEN },
    yaml: 'authz_listen: "127.0.0.1:0"\nauthz_grpc_listen: "127.0.0.1:0"\nrequest_log: { per_key: 10, flush_ms: 50 }\n',
    configure: (c) => { (c.upstreams.core as { url: string }).url = up.url }
  })
})

/** the key's request log, oldest first, once it holds `n` decisions */
async function logged (id: string, n: number): Promise<Logged[]> {
  let list: Logged[] = []
  let body = ''
  await eventually(async () => {
    const res = await adminCall(gw, 'GET', `/admin/v1/keys/${id}/requests`, TOKEN)
    body = res.body
    list = res.status === 200 ? (res.json() as { requests: Logged[] }).requests : []
    return list.length >= n
  }, 5000)
  if (body.includes(Q) || body.includes('?')) throw new Error(`a query string in the request log: ${body}`)
  const stored = (await gw.client.lrange(gw.fixtures.keys.keyRequests(id), 0, -1)).join('\n')
  if (stored.includes(Q)) throw new Error('a query string in Redis')
  return list.reverse()
}

const shape = (l: Logged): [string, string, number, string] => [l.method, l.path, l.status, l.reason]

t.test('a WebSocket upgrade, allowed and refused, lands in the key\'s request log', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const client = await openClient(gw.port, `/api/v1/users?${Q}=1`, { key: alice.key })
  client.socket.terminate()
  const refused = await wsUpgrade(gw.port, `/api/v1/orgs/globex/feed?${Q}=2`, [['Authorization', `Bearer ${alice.key}`]])
  t.equal(refused.status, 403, 'another org\'s feed is refused')
  const list = await logged(alice.id, 2)
  t.same(list.map(shape), [
    ['GET', '/api/v1/users', 101, 'allowed'],
    ['GET', '/api/v1/orgs/globex/feed', 403, 'org_mismatch']
  ], 'both upgrades, without their query')
  t.ok(list.every((l) => l.client === '127.0.0.1'), 'the client address')
})

t.test('the HTTP authorizer\'s decisions land in the key\'s request log, with the original method', async (t) => {
  const bob = await gw.fixtures.personalKey('bob')
  const decide = async (method: string, uri: string): Promise<number> => (await gw.authz('GET', '/_keygate', [
    ['X-Original-Method', method], ['X-Original-URI', uri], ['Authorization', `Bearer ${bob.key}`]
  ])).status
  t.equal(await decide('POST', `/api/v1/users?${Q}=3`), 200, 'a writer may POST')
  t.equal(await decide('DELETE', `/api/v1/orgs/acme/x?${Q}=4`), 403, 'but holds no orgs:read')
  t.same((await logged(bob.id, 2)).map(shape), [
    ['POST', '/api/v1/users', 200, 'allowed'],
    ['DELETE', '/api/v1/orgs/acme/x', 403, 'missing_permission']
  ], 'the original requests, without their query')
})

t.test('the gRPC authorizer\'s decisions land in the key\'s request log', async (t) => {
  const carol = await gw.fixtures.personalKey('carol')
  const client = authzClient(t, gw.authzGrpcPort)
  t.equal((await client.check('GET', `/api/v1/orgs/globex/projects?${Q}=5`, carol.key)).httpStatus, 200)
  t.equal((await client.check('POST', `/api/v1/users?${Q}=6`, carol.key)).httpStatus, 403)
  const list = await logged(carol.id, 2)
  t.same(list.map(shape), [
    ['GET', '/api/v1/orgs/globex/projects', 200, 'allowed'],
    ['POST', '/api/v1/users', 403, 'missing_permission']
  ], 'Envoy\'s original requests, without their query')
  t.ok(list.every((l) => l.client === '203.0.113.9'), 'the client Envoy reports')
})
