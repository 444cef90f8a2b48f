/**
 * What bounds WebSockets: the connection caps (per key: 429, per instance: 503, both
 * with Retry-After and the catalogue's error object, and no upgrade), and backpressure
 * (a slow upstream reader stops the gateway reading from the client, so what the
 * client sends waits on the client's side, not in the gateway).
 */
import t, { type Test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { openClient, wsUpgrade } from '../../helpers/ws-client.js'
import { startWsUpstream, type WsUpstream } from '../../helpers/ws-upstream.js'

async function world (t: Test, yaml: string): Promise<{ gw: TestGateway, up: WsUpstream }> {
  const up = await startWsUpstream()
  t.teardown(() => up.close())
  const gw = await startGateway(t, { yaml, configure: (c) => { (c.upstreams.core as { url: string }).url = up.url } })
  return { gw, up }
}

t.test('websocket.max_connections_per_key: one more gets 429 with Retry-After, other keys still connect', async (t) => {
  const { gw, up } = await world(t, 'websocket: { max_connections_per_key: 2 }\n')
  const alice = await gw.fixtures.personalKey('alice')
  const other = await gw.fixtures.personalKey('alice')
  const open = [await openClient(gw.port, '/api/v1/users', { key: alice.key }), await openClient(gw.port, '/api/v1/users', { key: alice.key })]
  t.teardown(() => { for (const c of open) c.socket.terminate() })

  const over = await wsUpgrade(gw.port, '/api/v1/users', { Authorization: `Bearer ${alice.key}` })
  t.equal(over.status, 429, 'the third connection of the key: 429')
  t.same(over.json(), { error: { code: 'rate_limited', message: 'Too many requests', status: 429 } })
  t.equal(over.headers['retry-after'], '5')
  t.notOk(over.headers.upgrade, 'no upgrade')
  t.equal((await gw.logOf(over))?.reason, 'websocket_key_limit')
  t.equal(up.upgrades.length, 2, 'it never reached the upstream')

  const another = await openClient(gw.port, '/api/v1/users', { key: other.key })
  t.teardown(() => another.socket.terminate())
  t.pass('another key of the same user connects')

  const noKey = await wsUpgrade(gw.port, '/api/v1/users', {})
  t.equal(noKey.status, 401, 'a client without a key learns nothing of the cap: 401 first')

  open[0]?.socket.close(1000)
  await open[0]?.closed
  let again = 0
  for (let i = 0; i < 50 && again !== 101; i++) {
    try {
      const c = await openClient(gw.port, '/api/v1/users', { key: alice.key })
      t.teardown(() => c.socket.terminate())
      again = 101
    } catch (err: unknown) {
      again = (err as { status?: number }).status ?? 0
      await sleep(20)
    }
  }
  t.equal(again, 101, 'a closed connection frees its slot')
})

t.test('websocket.max_connections: one more gets 503 with Retry-After', async (t) => {
  const { gw } = await world(t, 'websocket: { max_connections: 3 }\n')
  const keys = [await gw.fixtures.personalKey('alice'), await gw.fixtures.personalKey('bob'), await gw.fixtures.personalKey('alice')]
  for (const k of keys) {
    const c = await openClient(gw.port, '/api/v1/users', { key: k.key })
    t.teardown(() => c.socket.terminate())
  }
  const fourth = await gw.fixtures.personalKey('bob')
  const over = await wsUpgrade(gw.port, '/api/v1/users', { Authorization: `Bearer ${fourth.key}` })
  t.equal(over.status, 503, 'the instance is full: 503')
  t.same(over.json(), { error: { code: 'service_unavailable', message: 'Authentication service unavailable', status: 503 } })
  t.equal(over.headers['retry-after'], '5')
  t.equal((await gw.logOf(over))?.reason, 'websocket_limit')

  const metrics = await gw.admin('GET', '/metrics')
  t.match(metrics.body, /^keygate_websocket_connections 3$/m, 'the open connections, on /metrics')
  t.match(metrics.body, /^keygate_requests_total\{mode="websocket",rule="GET \/api\/v1\/users",status="101",status_class="1xx",reason="allowed"\} 3$/m, 'the upgrades, mode="websocket"')
  t.match(metrics.body, /^keygate_requests_total\{mode="websocket",rule="GET \/api\/v1\/users",status="503",status_class="5xx",reason="websocket_limit"\} 1$/m, 'the refusal')
})

t.test('backpressure: a slow upstream stops the gateway reading the client', async (t) => {
  const bound = 64 * 1024
  const { gw, up } = await world(t, `websocket: { max_buffered_bytes: ${bound} }\n`)
  const { key } = await gw.fixtures.personalKey('alice')
  const client = await openClient(gw.port, '/api/v1/users', { key })
  t.teardown(() => client.socket.terminate())
  up.pause()

  const message = Buffer.alloc(256 * 1024, 7)
  const count = 256 // 64 MiB, far more than every socket buffer on the way can hold
  for (let i = 0; i < count; i++) {
    message.writeUInt32BE(i, 0)
    client.socket.send(Buffer.from(message), { binary: true })
  }
  // until the client's queue stops shrinking (without backpressure, the gateway would
  // read it all, however long masking and parsing 64 MiB takes on a busy machine)
  let waiting = client.socket.bufferedAmount
  for (let i = 0, still = 0; i < 80 && still < 6; i++) {
    await sleep(250)
    const now = client.socket.bufferedAmount
    still = now === waiting ? still + 1 : 0
    waiting = now
  }
  t.comment(`still waiting on the client once it stopped moving: ${(waiting / 1048576).toFixed(1)} MiB of 64`)
  t.ok(waiting > 32 * 1024 * 1024, 'most of it still waits on the client: the gateway stopped reading')
  t.ok((up.connections[0]?.received.length ?? 0) === 0, '(the upstream read nothing)')

  up.resume()
  for (let i = 0; i < 500 && (up.connections[0]?.received.length ?? 0) < count; i++) await sleep(20)
  const received = up.connections[0]?.received ?? []
  t.equal(received.length, count, 'once the upstream reads, every message arrives')
  t.ok(received.every((m, i) => m.binary && m.data.length === message.length && m.data.readUInt32BE(0) === i), 'whole, binary, in order')
  for (let i = 0; i < 500 && client.received.length < count; i++) await sleep(20)
  t.equal(client.received.length, count, 'and every echo comes back')
})

t.test('rate limits count upgrades, as requests; an open connection decided again counts nothing', async (t) => {
  const { gw } = await world(t, '')
  const { key, id } = await gw.fixtures.personalKey('alice')
  await gw.fixtures.hset(gw.fixtures.keys.key(id), 'rate_limit', '1/1m')
  const first = await openClient(gw.port, '/api/v1/users', { key })
  t.teardown(() => first.socket.terminate())
  t.equal(first.headers['ratelimit-limit'], '1', 'the 101 carries RateLimit-Limit')
  t.equal(first.headers['ratelimit-remaining'], '0', 'and RateLimit-Remaining')

  const second = await wsUpgrade(gw.port, '/api/v1/users', { Authorization: `Bearer ${key}` })
  t.equal(second.status, 429, 'the second upgrade in the minute: 429, as a second GET would get')
  t.ok(Number(second.headers['retry-after']) >= 1, 'with Retry-After')
  t.equal(second.headers['ratelimit-limit'], '1')
  t.equal((await gw.logOf(second))?.reason, 'rate_limited')

  // a change to the key's record decides the open connection again: over its limit, it stays open
  const before = gw.app.cache.counters.invalidations
  await gw.fixtures.hset(gw.fixtures.keys.key(id), 'name', 'renamed')
  for (let i = 0; i < 100 && gw.app.cache.counters.invalidations === before; i++) await sleep(10)
  await sleep(200)
  first.socket.send('still here')
  const answer = await Promise.race([first.next(), first.closed.then((c) => ({ data: Buffer.from(`closed ${c.code}`) }))])
  t.equal(answer.data.toString(), 'still here', 'still open and relaying')
})
