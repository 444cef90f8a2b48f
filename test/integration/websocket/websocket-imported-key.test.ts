/**
 * A WebSocket opened with an imported key (docs/imports.md) is held to the same
 * deadline as one opened with a keygate key (docs/websocket.md): two gateway instances
 * share one Redis; revoking the imported key, or deactivating its user, closes the
 * connection through each with 1008 within 1 s, on both sides (client and upstream).
 */
import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import { openClient, type OpenedClient } from '../../helpers/ws-client.js'
import { startWsUpstream, type WsUpstream } from '../../helpers/ws-upstream.js'

/** the documented deadline (docs/websocket.md): closed within 1 s of the change */
const DEADLINE_MS = 1000

interface World { gws: TestGateway[], up: WsUpstream }

async function twoInstances (t: Test): Promise<World> {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = uniquePrefix()
  const up = await startWsUpstream()
  t.teardown(() => up.close())
  const gws: TestGateway[] = []
  for (let i = 0; i < 2; i++) {
    gws.push(await startGateway(t, { redis, prefix, seed: i === 0, yaml: 'keys: { accept_imported: true }\n', configure: (c) => { (c.upstreams.core as { url: string }).url = up.url } }))
  }
  return { gws, up }
}

/** A Kong-style key imported for alice; returns the token and its key id. */
async function importedKey (gw: TestGateway): Promise<{ token: string, id: string }> {
  const token = randomBytes(16).toString('hex')
  const { result: [k] } = await gw.fixtures.admin.importKeys([{
    line: 1,
    place: 'line 1',
    type: 'personal',
    user: 'alice',
    sha256: createHash('sha256').update(token).digest('hex'),
    from: 'key'
  }])
  return { token, id: (k as { id: string }).id }
}

async function connectEach (t: Test, w: World, key: string): Promise<OpenedClient[]> {
  const clients: OpenedClient[] = []
  for (const gw of w.gws) {
    const c = await openClient(gw.port, '/api/v1/users', { key })
    t.teardown(() => c.socket.terminate())
    c.socket.send('ping')
    t.equal((await c.next()).data.toString(), 'ping', `instance ${gw.port}: open and relaying`)
    clients.push(c)
  }
  return clients
}

async function assertClosed (t: Test, w: World, clients: OpenedClient[], deadline: number, what: string): Promise<void> {
  const late = sleep(Math.max(0, deadline - Date.now()) + 2000).then(() => undefined)
  for (const [i, c] of clients.entries()) {
    const closed = await Promise.race([c.closed, late])
    t.ok(closed !== undefined, `${what}: instance ${i + 1} closed the connection`)
    if (closed === undefined) continue
    t.equal(closed.code, 1008, `${what}: instance ${i + 1}: code 1008`)
    t.ok(closed.at <= deadline, `${what}: instance ${i + 1}: within ${DEADLINE_MS} ms (${closed.at - (deadline - DEADLINE_MS)} ms)`)
  }
  for (let i = 0; i < 100 && w.up.connections.some((c) => c.closed === undefined); i++) await sleep(20)
  for (const [i, c] of w.up.connections.entries()) t.equal(c.closed?.code, 1008, `${what}: upstream side ${i + 1}: 1008`)
}

t.test('revoking an imported key closes its connections on both instances within 1 s', async (t) => {
  const w = await twoInstances(t)
  const [first] = w.gws as [TestGateway]
  const { token, id } = await importedKey(first)
  const clients = await connectEach(t, w, token)
  await first.fixtures.admin.revokeKey(id)
  await assertClosed(t, w, clients, Date.now() + DEADLINE_MS, 'revoked')
  for (const gw of w.gws) {
    for (let i = 0; i < 50 && !gw.logs.some((l) => l.msg === 'websocket refused'); i++) await sleep(10)
    t.match(gw.logs.find((l) => l.msg === 'websocket refused'), { key_id: id, reason: 'key_revoked', code: 1008 }, 'the key id and the precise reason are logged')
  }
  t.notOk(w.gws.some((gw) => gw.rawLogs.some((l) => l.includes(token))), 'no log line holds the token')
})

t.test('deactivating the user of an imported key closes its connections within 1 s', async (t) => {
  const w = await twoInstances(t)
  const [first] = w.gws as [TestGateway]
  const { token } = await importedKey(first)
  const clients = await connectEach(t, w, token)
  await first.fixtures.admin.setUserStatus('alice', 'deactivated')
  await assertClosed(t, w, clients, Date.now() + DEADLINE_MS, 'user deactivated')
})
