/**
 * Issue 4, item 3: Redis error replies are unavailability. A registry read that
 * meets one gives `503 service_unavailable` (reason `registry_unavailable`) and marks
 * Redis down; never an allow, a 401 for a key that exists, or a 500. When the server
 * recovers, so does the gateway, without a restart.
 *
 * Each case makes a real redis-server produce the reply a read can really meet:
 *   LOADING     DEBUG RELOAD of a dataset loaded slowly (key-load-delay)
 *   BUSY        a script running past busy-reply-threshold
 *   MASTERDOWN  the gateway on a replica with replica-serve-stale-data no, master killed
 *   NOPERM      an ACL that takes the read commands away from the gateway's user
 *   NOAUTH      the server starts requiring a password and drops its clients: the
 *               reconnect meets NOAUTH in its handshake, so the client never becomes
 *               ready and every read fails at once
 * READONLY is not here: a read never meets it (the registry read is a read-only
 * script, which a replica serves); it is a write's reply (see redis-client.ts).
 *
 * The keys used during a fault were never used before, so no cache can answer them.
 * The reply itself is checked on the gateway's own connection, and against the
 * classifier the resolver should use (isUnavailableReply in redis-client.ts).
 */
import t from 'tap'
import type { Test } from 'tap'
import { Redis } from 'ioredis'
import { unavailableReply } from '../../../src/registry/redis-replies.js'
import { Fixtures, type KeyFixture } from '../../helpers/fixtures.js'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { asTestRedis, serverArgs, startRedisNode, type RedisNode } from '../../helpers/redis-node.js'
import { withClient } from '../../helpers/redis-sentinel.js'
import { until } from '../../helpers/wait.js'

const UNAVAILABLE = { error: { code: 'service_unavailable', message: 'Authentication service unavailable', status: 503 } }

async function node (t: Test, extra: string[] = []): Promise<RedisNode> {
  const n = await startRedisNode({ argv: serverArgs(extra) })
  t.teardown(async () => { await n.stop() })
  return n
}

/** A client of the test's own, without a command timeout (for commands that block the server). */
function longClient (t: Test, port: number, password?: string): Redis {
  const c = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0, retryStrategy: () => null, ...(password !== undefined ? { password } : {}) })
  c.on('error', () => {})
  t.teardown(() => { c.disconnect() })
  return c
}

async function freshKeys (fx: Fixtures, n: number): Promise<KeyFixture[]> {
  return await Promise.all(Array.from({ length: n }, async () => await fx.personalKey('alice')))
}

/** While the fault lasts: never-seen keys get the catalogue's 503, logged as registry_unavailable. */
async function assertFailsClosed (t: Test, gw: TestGateway, keys: KeyFixture[], what: string): Promise<void> {
  for (const k of keys) {
    const res = await gw.get('/api/v1/users', k.key)
    t.equal(res.status, 503, `${what}: a never-seen key gets 503 (not 200, 401 or 500)`)
    t.same(res.status === 503 ? JSON.parse(res.body) : res.body, UNAVAILABLE, `${what}: the catalogue's 503 body`)
    t.equal((await gw.logOf(res))?.reason, 'registry_unavailable', `${what}: logged as registry_unavailable`)
  }
  t.equal(gw.upstream.requests.filter((r) => keys.some((k) => r.headers['x-auth-key-id'] === k.id)).length, 0, `${what}: nothing reached the upstream`)
}

/** The reply the gateway's own connection meets now, classified as unavailability. */
async function assertReply (t: Test, gw: TestGateway, code: string): Promise<void> {
  const err: unknown = await gw.app.redis.hgetall(`${gw.prefix}key:none`).then(() => undefined, (e: unknown) => e)
  t.match(err, { name: 'ReplyError', message: new RegExp(`^${code} `) }, `the gateway's connection meets -${code}`)
  t.equal(unavailableReply(err), code, `isUnavailableReply classifies -${code} as unavailability`)
}

async function assertRecovers (t: Test, gw: TestGateway, key: KeyFixture, what: string): Promise<void> {
  t.not(await eventually(async () => (await gw.get('/api/v1/users', key.key)).status === 200, 15_000, 100), -1, `${what}: a never-seen key resolves again`)
  t.not(await eventually(async () => (await gw.admin('GET', '/readyz')).status === 200, 15_000, 100), -1, `${what}: /readyz is ready again`)
}

function notReadyWithin (gw: TestGateway, ms = 5000): Promise<number> {
  return eventually(async () => (await gw.admin('GET', '/readyz')).status === 503, ms, 50)
}

t.test('-LOADING (DEBUG RELOAD): 503, then recovery', async (t) => {
  const server = await node(t, ['--enable-debug-command', 'yes'])
  const gw = await startGateway(t, { redis: asTestRedis(server) })
  const keys = await freshKeys(gw.fixtures, 4)
  const later = await gw.fixtures.personalKey('alice')

  // a dataset that loads slowly: 20000 keys at 150 us each
  const admin = longClient(t, server.port)
  await admin.call('DEBUG', 'POPULATE', '20000', 'filler')
  await admin.call('CONFIG', 'SET', 'key-load-delay', '150')
  await admin.call('CONFIG', 'SET', 'loading-process-events-interval-bytes', '1024')
  const reloaded = admin.call('DEBUG', 'RELOAD')
  await until(async () => /loading:1/.test(await withClient(server.port, async (c) => await c.info('persistence'))), 5000, 'the server to be loading')

  await assertReply(t, gw, 'LOADING')
  await assertFailsClosed(t, gw, keys, 'while loading')
  t.not(await notReadyWithin(gw), -1, 'while loading: /readyz is not ready')
  t.match(await withClient(server.port, async (c) => await c.info('persistence')), /loading:1/, '(the server was still loading)')

  await reloaded
  await assertRecovers(t, gw, later, 'after loading')
})

t.test('-BUSY (a script past busy-reply-threshold): 503, then recovery after SCRIPT KILL', async (t) => {
  const server = await node(t)
  const gw = await startGateway(t, { redis: asTestRedis(server) })
  const keys = await freshKeys(gw.fixtures, 3)
  const later = await gw.fixtures.personalKey('alice')

  const admin = longClient(t, server.port)
  await admin.call('CONFIG', 'SET', 'busy-reply-threshold', '100')
  const busy = longClient(t, server.port).eval('while true do end', 0).catch((err: unknown) => err)
  await until(async () => await withClient(server.port, async (c) => await c.ping()).then(() => false, (err: unknown) => /^BUSY /.test((err as Error).message)), 5000, 'the server to answer BUSY')

  await assertReply(t, gw, 'BUSY')
  await assertFailsClosed(t, gw, keys, 'while busy')
  t.not(await notReadyWithin(gw), -1, 'while busy: /readyz is not ready')

  await withClient(server.port, async (c) => await c.call('SCRIPT', 'KILL'))
  t.match(await busy, { message: /killed/i }, '(the script was killed)')
  await assertRecovers(t, gw, later, 'after SCRIPT KILL')
})

t.test('-MASTERDOWN (a replica that must not serve stale data, master lost): 503, then recovery', async (t) => {
  // (a directory of its own: the replica's full sync must not overwrite the master's RDB)
  const master = await node(t)
  const replica = await node(t, ['--replicaof', '127.0.0.1', String(master.port), '--replica-serve-stale-data', 'no'])
  // the gateway reads from the replica; the registry is written on the master
  const gw = await startGateway(t, { redis: asTestRedis(replica), seed: false })
  const writer = longClient(t, master.port)
  const fx = new Fixtures(writer, gw.prefix, gw.config.keys.prefix)
  await fx.standardWorld()
  const used = await fx.personalKey('alice')
  const keys = await freshKeys(fx, 3)
  const later = await fx.personalKey('alice')
  await writer.call('WAIT', '1', '1000')
  t.equal((await gw.get('/api/v1/users', used.key)).status, 200, 'the replica serves registry reads while its master is up')

  await writer.save() // so that the master comes back with the registry
  master.kill('SIGKILL')
  await until(async () => /master_link_status:down/.test(await withClient(replica.port, async (c) => await c.info('replication'))), 5000, 'the replica to lose its master')

  await assertReply(t, gw, 'MASTERDOWN')
  await assertFailsClosed(t, gw, keys, 'master down')
  t.not(await notReadyWithin(gw), -1, 'master down: /readyz is not ready')

  await master.restart()
  await assertRecovers(t, gw, later, 'master back')
})

t.test('-NOPERM (an ACL takes the reads away): 503, then recovery', async (t) => {
  const server = await node(t)
  const gw = await startGateway(t, { redis: asTestRedis(server) })
  const keys = await freshKeys(gw.fixtures, 3)
  const later = await gw.fixtures.personalKey('alice')
  const root = longClient(t, server.port)
  await root.call('ACL', 'SETUSER', 'kgroot', 'on', '>rootpw', '~*', '&*', '+@all')
  await root.call('AUTH', 'kgroot', 'rootpw')

  await root.call('ACL', 'SETUSER', 'default', '-@all')
  await assertReply(t, gw, 'NOPERM')
  await assertFailsClosed(t, gw, keys, 'reads forbidden')
  t.not(await notReadyWithin(gw), -1, 'reads forbidden: /readyz is not ready')

  await root.call('ACL', 'SETUSER', 'default', '+@all')
  await assertRecovers(t, gw, later, 'reads allowed again')
})

t.test('-NOAUTH (a password now required, clients dropped): 503 at once, then recovery', async (t) => {
  const server = await node(t)
  const gw = await startGateway(t, { redis: asTestRedis(server) })
  const keys = await freshKeys(gw.fixtures, 3)
  const later = await gw.fixtures.personalKey('alice')
  const root = longClient(t, server.port)
  await root.ping()

  await root.config('SET', 'requirepass', 'now-required')
  await root.call('CLIENT', 'KILL', 'TYPE', 'normal') // (SKIPME yes: this connection stays)
  const probe = new Redis({ host: '127.0.0.1', port: server.port, lazyConnect: true, enableReadyCheck: false, maxRetriesPerRequest: 0, retryStrategy: () => null })
  probe.on('error', () => {})
  t.teardown(() => { probe.disconnect() })
  await probe.connect()
  const noauth = await probe.hgetall('x').then(() => undefined, (e: unknown) => e)
  t.equal(unavailableReply(noauth), 'NOAUTH', 'a new connection meets -NOAUTH, classified as unavailability')

  t.not(await notReadyWithin(gw), -1, 'password required: /readyz is not ready')
  t.not(gw.app.redis.status, 'ready', 'the gateway\'s client does not become ready (its handshake meets NOAUTH)')
  await assertFailsClosed(t, gw, keys, 'password required')

  await root.config('SET', 'requirepass', '')
  await assertRecovers(t, gw, later, 'password no longer required')
})
