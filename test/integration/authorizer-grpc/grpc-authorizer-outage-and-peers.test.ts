/**
 * The gRPC authorizer beyond one healthy instance (docs/authorizer-grpc.md):
 * - a revocation reaches two instances on one Redis within 1 s, from their caches;
 * - Redis stopped: a key not cached gets a CheckResponse whose status is UNAVAILABLE
 *   with a 503 denied_response (a refusal, never an RPC error), and the health service
 *   says NOT_SERVING until Redis answers again;
 * - a peer outside authz.trusted_peers is refused, and its reported client ignored;
 * - TLS, with and without a client certificate;
 * - a stop says NOT_SERVING to a Watch stream and closes the listener, first of the parts.
 */
import * as grpc from '@grpc/grpc-js'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { authzClient } from '../../helpers/grpc-authz.js'
import { eventually, startGateway } from '../../helpers/gateway.js'
import { startPrivateRedis, startRedis, uniquePrefix } from '../../helpers/redis.js'
import { makeTestCa, SERVER_NAME } from '../../helpers/test-ca.js'

const GRPC_YAML = 'authz_grpc_listen: "127.0.0.1:0"\n'
const UNAVAILABLE = 14

t.test('a revocation reaches two instances within 1 s', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = uniquePrefix()
  const a = await startGateway(t, { redis, prefix, yaml: GRPC_YAML })
  const b = await startGateway(t, { redis, prefix, yaml: GRPC_YAML, seed: false })
  const key = await a.fixtures.personalKey('alice')
  const clients = [authzClient(t, a.authzGrpcPort), authzClient(t, b.authzGrpcPort)]
  for (const c of clients) t.equal((await c.check('GET', '/api/v1/users', key.key)).code, 0, 'allowed, and cached')

  await a.client.hset(a.fixtures.keys.key(key.id), 'status', 'revoked')
  for (const [i, c] of clients.entries()) {
    const ms = await eventually(async () => (await c.check('GET', '/api/v1/users', key.key)).code === 16, 1000, 10)
    t.ok(ms >= 0, `instance ${i + 1}: UNAUTHENTICATED within 1 s (${ms} ms)`)
    const res = await c.check('GET', '/api/v1/users', key.key)
    t.equal(res.httpStatus, 401)
  }
})

t.test('Redis stopped: UNAVAILABLE with a 503, health NOT_SERVING; back once Redis is', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const gw = await startGateway(t, { redis, yaml: GRPC_YAML })
  const client = authzClient(t, gw.authzGrpcPort)
  const alice = await gw.fixtures.personalKey('alice')
  t.equal(await client.health(), 'SERVING')

  redis.kill('SIGKILL')
  const res = await client.check('GET', '/api/v1/users', alice.key)
  t.equal(res.code, UNAVAILABLE, 'the response\'s status: UNAVAILABLE (the RPC itself succeeded)')
  t.equal(res.httpStatus, 503)
  t.same(JSON.parse(res.body), {
    error: { code: 'service_unavailable', message: 'Authentication service unavailable', status: 503 }
  })
  t.equal(res.response.ok_response, undefined, 'never allowed')
  const line = await gw.logOf({ headers: res.headers } as never)
  t.match(line, { via: 'envoy-grpc', status: 503, reason: 'registry_unavailable' })
  t.ok(await eventually(async () => await client.health() === 'NOT_SERVING', 3000) >= 0, 'health: NOT_SERVING')
  t.equal(await client.health('envoy.service.auth.v3.Authorization'), 'NOT_SERVING')

  await redis.restart()
  t.ok(await eventually(async () => await client.health() === 'SERVING', 10_000) >= 0, 'health: SERVING again')
  // (the restarted server is empty: the world again)
  await gw.fixtures.standardWorld()
  const again = await gw.fixtures.personalKey('alice')
  t.equal((await client.check('GET', '/api/v1/users', again.key)).code, 0, 'allowed again')
})

t.test('a peer outside authz.trusted_peers: PERMISSION_DENIED, 403 untrusted_peer', async (t) => {
  const gw = await startGateway(t, { yaml: GRPC_YAML + 'authz: { trusted_peers: ["10.0.0.0/8"] }\n' })
  const client = authzClient(t, gw.authzGrpcPort)
  const alice = await gw.fixtures.personalKey('alice')
  const res = await client.check('GET', '/api/v1/users', alice.key, { source: '10.1.2.3' })
  t.equal(res.code, 7)
  t.equal(res.httpStatus, 403)
  t.equal(res.response.ok_response, undefined)
  t.match(res.headers['www-authenticate'], /^Bearer realm="keygate", error="insufficient_scope"$/)
  const line = await gw.logOf({ headers: res.headers } as never)
  t.match(line, { via: 'envoy-grpc', status: 403, reason: 'untrusted_peer', client_ip: '127.0.0.1' },
    'the reported client is not believed: the peer is the client')
  t.equal(line?.key_id, undefined, 'the key was never looked at')
})

t.test('TLS: a client that trusts the CA is answered; with client_ca_file, only one with a certificate', async (t) => {
  const ca = makeTestCa(t)
  const tls = `authz_grpc: { tls: { cert_file: "${join(ca.dir, 'server.pem')}", key_file: "${join(ca.dir, 'server.key')}" } }\n`
  const gw = await startGateway(t, { yaml: GRPC_YAML + tls })
  const alice = await gw.fixtures.personalKey('alice')
  const name = { 'grpc.ssl_target_name_override': SERVER_NAME }
  const client = authzClient(t, gw.authzGrpcPort, grpc.credentials.createSsl(ca.ca), name)
  t.equal((await client.check('GET', '/api/v1/users', alice.key)).code, 0, 'allowed over TLS')
  const plain = authzClient(t, gw.authzGrpcPort)
  await t.rejects(plain.check('GET', '/api/v1/users', alice.key), { code: UNAVAILABLE }, 'plaintext is not answered')

  const mtls = `authz_grpc: { tls: { cert_file: "${join(ca.dir, 'server.pem')}", key_file: "${join(ca.dir, 'server.key')}", client_ca_file: "${ca.caFile}" } }\n`
  const gw2 = await startGateway(t, { yaml: GRPC_YAML + mtls })
  const anonymous = authzClient(t, gw2.authzGrpcPort, grpc.credentials.createSsl(ca.ca), name)
  await t.rejects(anonymous.check('GET', '/api/v1/users', alice.key), 'no client certificate: no answer')
  const withCert = authzClient(t, gw2.authzGrpcPort, grpc.credentials.createSsl(
    ca.ca, readFileSync(ca.clientKeyFile), readFileSync(ca.clientCertFile)), name)
  const key = await gw2.fixtures.personalKey('alice')
  t.equal((await withCert.check('GET', '/api/v1/users', key.key)).code, 0, 'allowed with the client certificate')
})

t.test('a stop: NOT_SERVING, then the listener closes with the other listeners, first: no new call', async (t) => {
  const gw = await startGateway(t, { yaml: GRPC_YAML })
  const client = authzClient(t, gw.authzGrpcPort)
  t.equal(await client.health(), 'SERVING')
  t.equal(gw.app.lifecycle.stopOrder[0], 'listeners', 'the listeners stop first')
  const watching = client.watch()
  t.ok(await eventually(async () => watching.statuses.length > 0) >= 0, 'a Watch stream open')
  t.same(watching.statuses, ['SERVING'])
  const started = Date.now()
  await gw.app.close()
  t.ok(Date.now() - started < 10_000, 'an open Watch stream does not hold the stop')
  t.same(watching.statuses, ['SERVING', 'NOT_SERVING'], 'the stream was told NOT_SERVING')
  t.ok(await eventually(async () => watching.ended(), 8000) >= 0, 'and ended')
  await t.rejects(client.check('GET', '/api/v1/users'), { code: UNAVAILABLE }, 'the listener is closed')
})
