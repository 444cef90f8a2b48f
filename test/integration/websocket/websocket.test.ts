/**
 * WebSocket pass-through (docs/websocket.md): an upgrade is decided exactly like a GET
 * to the same target, refused with the same error response and no upgrade; allowed,
 * the upstream (a real ws server that echoes and records each upgrade request) gets
 * the identity headers, never the client's copies, and messages pass both ways as
 * they came. Refusals are read on raw sockets.
 */
import t, { type Test } from 'tap'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { writeKeyFile } from '../../helpers/assertion-keys.js'
import { startGateway, type LogLine, type TestGateway } from '../../helpers/gateway.js'
import { SPAN_KIND_CLIENT, SPAN_KIND_SERVER, startOtlpReceiver } from '../../helpers/otlp-receiver.js'
import { rawRequest, type RawResponse } from '../../helpers/raw-http.js'
import { openConversation } from '../../helpers/raw-socket.js'
import { rawValues } from '../../helpers/upstream.js'
import { openClient, wsUpgrade } from '../../helpers/ws-client.js'
import { startWsUpstream, type WsUpstream } from '../../helpers/ws-upstream.js'

const TARGET = '/api/v1/%75sers?stream=1&x=%22q%22'

async function world (t: Test, yaml?: string): Promise<{ gw: TestGateway, up: WsUpstream }> {
  const up = await startWsUpstream()
  t.teardown(() => up.close())
  const gw = await startGateway(t, { yaml, configure: (c) => { (c.upstreams.core as { url: string }).url = up.url } })
  return { gw, up }
}

t.test('an allowed upgrade: identity headers upstream, spoofed ones stripped, path and query byte for byte', async (t) => {
  const { gw, up } = await world(t)
  const { key, id } = await gw.fixtures.personalKey('alice')
  const client = await openClient(gw.port, TARGET, {
    key,
    protocols: ['chat.v2', 'chat.v1'],
    headers: { 'X-Auth-User-Id': 'mallory', 'X-Auth_Role': 'admin', 'X-Auth-Assertion': 'forged', 'X-Forwarded-For': '6.6.6.6', Cookie: 'a=b' }
  })
  t.teardown(() => client.socket.terminate())
  const seen = up.upgrades.at(-1)
  t.ok(seen, 'the upstream got the upgrade')
  t.equal(seen?.url, '/api/v1/users?stream=1&x=%22q%22', 'the path as decided (%75 is u), the raw query as sent')
  const values = (name: string): string[] => rawValues({ method: 'GET', url: '', headers: {}, body: Buffer.alloc(0), rawHeaders: seen?.rawHeaders ?? [] }, name)
  t.same(values('x-auth-key-id'), [id])
  t.same(values('x-auth-user-id'), ['alice'], 'the client\'s X-Auth-User-Id never reaches the upstream')
  t.same(values('x-auth-role'), ['reader'], '(nor its X-Auth_Role)')
  t.same(values('x-auth-org-id'), ['acme'])
  t.same(values('x-auth-key-type'), ['personal'])
  t.same(values('x-auth-assertion'), [], 'no assertion when it is off, and the client\'s is dropped')
  t.same(values('authorization'), [], 'the key is not forwarded')
  t.same(values('x-forwarded-for'), ['127.0.0.1'], 'X-Forwarded-For replaced')
  t.same(values('cookie'), ['a=b'], 'other headers pass')
  t.same(values('host'), [`127.0.0.1:${up.port}`], 'the upstream\'s own host')
  t.same(values('sec-websocket-protocol'), ['chat.v2,chat.v1'], 'the client\'s subprotocol offers')
  t.equal(values('x-request-id')[0], client.headers['x-request-id'], 'the 101 carries the request id the upstream got')
  t.equal(client.socket.protocol, 'chat.v2', 'the subprotocol the upstream chose')

  const line = await gw.logOf({ headers: { 'x-request-id': String(client.headers['x-request-id']) } } as unknown as RawResponse)
  t.match(line, { mode: 'websocket', method: 'GET', path: '/api/v1/users', status: 101, client_ip: '127.0.0.1', key_id: id, reason: 'allowed', rule: 'GET /api/v1/users' }, 'one log line, as for a GET')
  t.notOk(JSON.stringify(gw.logs).includes(key), 'the key is never logged')
})

t.test('headers the client lists in Connection are hop-by-hop: never forwarded on an upgrade, as on a request', async (t) => {
  const { gw, up } = await world(t)
  const { key } = await gw.fixtures.personalKey('alice')
  const res = await wsUpgrade(gw.port, '/api/v1/users', [
    ['Connection', 'Upgrade, X-Hop-One,x-hop-two'],
    ['Authorization', `Bearer ${key}`],
    ['X-Hop-One', 'one'],
    ['X-Hop-Two', 'two'],
    ['X-Kept', 'kept']
  ])
  t.equal(res.status, 101, 'upgraded')
  const seen = up.upgrades.at(-1)
  t.ok(seen, 'the upstream got the upgrade')
  const values = (name: string): string[] => rawValues({ method: 'GET', url: '', headers: {}, body: Buffer.alloc(0), rawHeaders: seen?.rawHeaders ?? [] }, name)
  t.same(values('x-hop-one'), [], 'a name listed in Connection is dropped')
  t.same(values('x-hop-two'), [], 'each name listed, in any case, with or without spaces')
  t.same(values('x-kept'), ['kept'], 'a header not listed passes')
})

t.test('a query a URL parser would re-encode reaches the upstream byte for byte', async (t) => {
  const { gw, up } = await world(t)
  const { key } = await gw.fixtures.personalKey('alice')
  // (a WebSocket client library would itself encode `'` and `"`: the request is written raw)
  const target = '/api/v1/users?q=\'a\'&r="b"&s=<c>&t=`d`'
  const conversation = await openConversation(gw.port)
  t.teardown(() => conversation.socket.destroy())
  conversation.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: Bearer ${key}\r\n\r\n`)
  const head = await conversation.waitFor(/\r\n\r\n/)
  t.match(head, /^HTTP\/1\.1 101 /, 'upgraded')
  t.match(head, /\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK\+xOo=\r\n/, 'the accept for the client\'s key')
  t.equal(up.upgrades.at(-1)?.url, target, 'the same bytes upstream')
})

t.test('messages pass both ways as they came: text, binary, empty, large; pings end to end', async (t) => {
  const { gw, up } = await world(t)
  const { key } = await gw.fixtures.personalKey('alice')
  const client = await openClient(gw.port, '/api/v1/users', { key })
  t.teardown(() => client.socket.terminate())

  client.socket.send('héllo', { binary: false })
  let m = await client.next()
  t.same([m.data.toString('utf8'), m.binary], ['héllo', false], 'text stays text')
  t.same([up.connections[0]?.received[0]?.data.toString('utf8'), up.connections[0]?.received[0]?.binary], ['héllo', false], 'the upstream got it as text')

  const bytes = Buffer.from([0, 1, 2, 255, 254])
  client.socket.send(bytes, { binary: true })
  m = await client.next()
  t.same([m.data, m.binary], [bytes, true], 'binary stays binary')

  client.socket.send(Buffer.alloc(0), { binary: true })
  m = await client.next()
  t.same([m.data.length, m.binary], [0, true], 'an empty message')

  const large = Buffer.alloc(5 * 1024 * 1024)
  for (let i = 0; i < large.length; i += 4096) large.writeUInt32BE(i, i)
  client.socket.send(large, { binary: true })
  m = await client.next()
  t.ok(m.data.equals(large), 'a 5 MiB message, intact')

  const pong = new Promise<Buffer>((resolve) => client.socket.once('pong', resolve))
  client.socket.ping(Buffer.from('are you there'))
  t.equal((await pong).toString(), 'are you there', 'a ping reaches the upstream, and its pong comes back')

  const ping = new Promise<Buffer>((resolve) => client.socket.once('ping', resolve))
  up.connections[0]?.socket.ping(Buffer.from('upstream ping'))
  t.equal((await ping).toString(), 'upstream ping', 'an upstream ping reaches the client')
})

t.test('what the upstream sends the moment it is open reaches the client', async (t) => {
  const { gw, up } = await world(t)
  up.setMode({ kind: 'greet' })
  const { key } = await gw.fixtures.personalKey('alice')
  for (let i = 0; i < 5; i++) {
    const client = await openClient(gw.port, '/api/v1/users', { key })
    t.teardown(() => client.socket.terminate())
    const first = client.received[0] ?? await Promise.race([client.next(), sleep(2000).then(() => undefined)])
    t.equal(first?.data.toString(), 'hello', `connection ${i + 1}: the greeting`)
  }
})

t.test('closes propagate with their code and reason, both ways', async (t) => {
  const { gw, up } = await world(t)
  const { key } = await gw.fixtures.personalKey('alice')

  const a = await openClient(gw.port, '/api/v1/users', { key })
  a.socket.close(4001, 'client done')
  await a.closed
  for (let i = 0; i < 100 && up.connections[0]?.closed === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.same(up.connections[0]?.closed, { code: 4001, reason: 'client done' }, 'the upstream sees the client\'s close')

  const b = await openClient(gw.port, '/api/v1/users', { key })
  up.connections[1]?.socket.close(4002, 'upstream done')
  const seen = await b.closed
  t.same([seen.code, seen.reason], [4002, 'upstream done'], 'the client sees the upstream\'s close')

  const c = await openClient(gw.port, '/api/v1/users', { key })
  up.connections[2]?.socket.terminate()
  t.equal((await c.closed).code, 1014, 'an upstream gone without a close: 1014 (bad gateway)')

  const closes = (): LogLine[] => gw.logs.filter((l) => l.msg === 'websocket closed')
  for (let i = 0; i < 100 && closes().length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.same(closes().map((l) => [l.cause, l.code]).sort(), [['client', 4001], ['upstream', 1006], ['upstream', 4002]], 'one line per connection ended, with its cause and code')
})

t.test('a message over websocket.max_message_bytes closes that connection with 1009', async (t) => {
  const { gw, up } = await world(t, 'websocket: { max_message_bytes: 65536 }\n')
  const { key } = await gw.fixtures.personalKey('alice')
  const client = await openClient(gw.port, '/api/v1/users', { key })
  client.socket.send(Buffer.alloc(65536), { binary: true })
  t.equal((await client.next()).data.length, 65536, 'at the limit: relayed')
  client.socket.send(Buffer.alloc(65537), { binary: true })
  t.equal((await client.closed).code, 1009, 'over it: 1009 (message too big)')
  for (let i = 0; i < 100 && up.connections[0]?.closed === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(up.connections[0]?.closed?.code, 1001, 'the upstream is told the client went away')
  t.equal(up.connections[0]?.received.length, 1, 'the oversized message never reached it')
})

t.test('refused upgrades: the same status, body, challenge and reason as a GET, and no upgrade', async (t) => {
  const { gw, up } = await world(t)
  const alice = await gw.fixtures.personalKey('alice')
  const carol = await gw.fixtures.personalKey('carol')
  const cases: Array<{ what: string, target: string, headers: Record<string, string>, status: number, reason: string }> = [
    { what: 'no key', target: '/api/v1/users', headers: {}, status: 401, reason: 'missing_credential' },
    { what: 'a bad key', target: '/api/v1/users', headers: { Authorization: 'Bearer kg_nonsense' }, status: 401, reason: 'malformed_credential' },
    { what: 'an unknown key', target: '/api/v1/users', headers: { Authorization: `Bearer ${alice.key.slice(0, -12)}${'A'.repeat(12)}` }, status: 401, reason: '' },
    { what: 'a role without the permission', target: '/api/v1/users', headers: { Authorization: `Bearer ${carol.key}` }, status: 403, reason: 'missing_permission' },
    { what: 'no rule for the path', target: '/api/v1/nothing', headers: { Authorization: `Bearer ${alice.key}` }, status: 403, reason: 'no_rule' },
    { what: 'a dot segment', target: '/api/v1/../admin', headers: { Authorization: `Bearer ${alice.key}` }, status: 400, reason: 'bad_path' },
    { what: 'an encoded slash', target: '/api/v1/users%2Fx', headers: { Authorization: `Bearer ${alice.key}` }, status: 400, reason: 'bad_path' },
    { what: 'no route', target: '/elsewhere', headers: { Authorization: `Bearer ${alice.key}` }, status: 404, reason: 'no_route' }
  ]
  for (const c of cases) {
    const get = await gw.send('GET', c.target, c.headers)
    const upgrade = await wsUpgrade(gw.port, c.target, c.headers)
    t.equal(upgrade.status, c.status, `${c.what}: ${c.status}`)
    t.equal(upgrade.status, get.status, `${c.what}: as a GET`)
    t.equal(upgrade.body, get.body, `${c.what}: the same error object`)
    t.equal(upgrade.headers['content-type'], 'application/json; charset=utf-8')
    t.equal(upgrade.headers['www-authenticate'], get.headers['www-authenticate'], `${c.what}: the same challenge`)
    t.match(upgrade.headers['x-request-id'], /^[0-9a-f-]{36}$/, `${c.what}: a request id`)
    t.notOk(upgrade.headers.upgrade, `${c.what}: no upgrade`)
    const [getLine, upgradeLine] = [await gw.logOf(get), await gw.logOf(upgrade)]
    t.equal(upgradeLine?.reason, getLine?.reason, `${c.what}: the same reason (${String(getLine?.reason)})`)
    if (c.reason !== '') t.equal(upgradeLine?.reason, c.reason)
    t.equal(upgradeLine?.mode, 'websocket')
  }
  t.equal(up.upgrades.length, 0, 'no refused upgrade reached the upstream')
})

t.test('what is not a WebSocket handshake is refused with 400 (fail closed)', async (t) => {
  const { gw, up } = await world(t)
  const { key } = await gw.fixtures.personalKey('alice')
  const auth = { Authorization: `Bearer ${key}` }
  const cases: Array<{ what: string, raw: string }> = [
    { what: 'Upgrade: h2c', raw: `GET /api/v1/users HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\nAuthorization: ${auth.Authorization}\r\n\r\n` },
    { what: 'a POST', raw: `POST /api/v1/users HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: ${auth.Authorization}\r\nContent-Length: 0\r\n\r\n` },
    { what: 'no Sec-WebSocket-Key', raw: `GET /api/v1/users HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nAuthorization: ${auth.Authorization}\r\n\r\n` },
    { what: 'version 12', raw: `GET /api/v1/users HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 12\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: ${auth.Authorization}\r\n\r\n` },
    { what: 'a malformed subprotocol', raw: `GET /api/v1/users HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: a b\r\nAuthorization: ${auth.Authorization}\r\n\r\n` },
    { what: 'a body', raw: `GET /api/v1/users HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nContent-Length: 5\r\nAuthorization: ${auth.Authorization}\r\n\r\nhello` },
    { what: 'a second Host', raw: `GET /api/v1/users HTTP/1.1\r\nHost: x\r\nHost: y\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nAuthorization: ${auth.Authorization}\r\n\r\n` }
  ]
  for (const c of cases) {
    const res = await rawRequest(gw.port, c.raw)
    t.equal(res.status, 400, `${c.what}: 400`)
    t.same(res.json(), { error: { code: 'bad_request', message: 'Malformed request', status: 400 } }, `${c.what}: the error object`)
    t.ok(res.closed, `${c.what}: the connection closes`)
    const line = await gw.logOf(res)
    t.equal(line?.mode, 'websocket', `${c.what}: logged`)
  }
  t.equal(up.upgrades.length, 0, 'none reached the upstream')
})

t.test('the upstream refuses or is down: its answer passes through, or 502 / 504, and no upgrade', async (t) => {
  const { gw, up } = await world(t)
  const { key } = await gw.fixtures.personalKey('alice')
  const auth = { Authorization: `Bearer ${key}` }

  up.setMode({ kind: 'refuse', status: 403 })
  const refused = await wsUpgrade(gw.port, '/api/v1/users', auth)
  t.equal(refused.status, 403, 'the upstream\'s own answer')
  t.same(refused.json(), { upstream: 'refused' }, 'its body')
  t.equal(refused.headers['x-upstream'], 'yes', 'its headers')
  t.match(refused.headers['x-request-id'], /^[0-9a-f-]{36}$/, 'and the request id')
  t.equal((await gw.logOf(refused))?.reason, 'allowed', 'the gateway allowed it: reason allowed')

  await up.close()
  const down = await wsUpgrade(gw.port, '/api/v1/users', auth)
  t.equal(down.status, 502, 'upstream down: 502')
  t.same(down.json(), { error: { code: 'bad_gateway', message: 'Upstream service unavailable', status: 502 } })
  t.equal((await gw.logOf(down))?.reason, 'upstream_error')
})

t.test('an upstream that never answers the upgrade: 504', async (t) => {
  const sockets = new Set<Socket>()
  const silent = createServer((s) => { sockets.add(s) })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    silent.close()
  })
  const port = (silent.address() as AddressInfo).port
  const gw = await startGateway(t, { configure: (c) => { c.upstreams.core = { ...(c.upstreams.core as NonNullable<typeof c.upstreams.core>), url: `http://127.0.0.1:${port}`, timeout_ms: 300 } } })
  const { key } = await gw.fixtures.personalKey('alice')
  const res = await wsUpgrade(gw.port, '/api/v1/users', { Authorization: `Bearer ${key}` })
  t.equal(res.status, 504)
  t.equal((await gw.logOf(res))?.reason, 'upstream_timeout')
})

t.test('with the assertion on, the upstream gets it on the upgrade, bound to GET and the path', async (t) => {
  const { file } = writeKeyFile('EdDSA')
  const up = await startWsUpstream()
  t.teardown(() => up.close())
  const gw = await startGateway(t, {
    yaml: 'identity: { assertion: { enabled: true } }\n',
    env: { KEYGATE_ASSERTION_KEY_FILE: file },
    configure: (c) => { (c.upstreams.core as { url: string }).url = up.url }
  })
  const { key, id } = await gw.fixtures.personalKey('alice')
  const client = await openClient(gw.port, '/api/v1/users?q=1', { key, headers: { 'X-Auth-Assertion': 'forged' } })
  t.teardown(() => client.socket.terminate())
  const assertion = up.upgrades.at(-1)?.headers['x-auth-assertion']
  t.type(assertion, 'string')
  const payload = JSON.parse(Buffer.from(String(assertion).split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>
  t.match(payload, { key_id: id, htm: 'GET', htu: '/api/v1/users', jti: client.headers['x-request-id'] }, 'the claims of this upgrade')
})

t.test('websocket.enabled false: an upgrade is an ordinary GET, and its Upgrade is never forwarded', async (t) => {
  const gw = await startGateway(t, { yaml: 'websocket: { enabled: false }\n' })
  const { key } = await gw.fixtures.personalKey('alice')
  const res = await wsUpgrade(gw.port, '/api/v1/users', { Authorization: `Bearer ${key}` })
  t.equal(res.status, 200, 'proxied as a GET')
  t.equal(gw.upstream.last()?.headers.upgrade, undefined, 'no Upgrade upstream')
})

t.test('an idle connection outlives the request timeouts: they bound a request head, not a WebSocket', async (t) => {
  const { gw } = await world(t, 'limits: { header_timeout_ms: 100, body_idle_timeout_ms: 100 }\n')
  const { key } = await gw.fixtures.personalKey('alice')
  const client = await openClient(gw.port, '/api/v1/users', { key })
  t.teardown(() => client.socket.terminate())
  const early = await Promise.race([client.closed, new Promise((resolve) => setTimeout(resolve, 1500)).then(() => undefined)])
  t.equal(early, undefined, 'still open after 15 times the head timeout')
  client.socket.send('late')
  t.equal((await client.next()).data.toString(), 'late', 'and relaying')
})

t.test('the trace context, as for every request: continued to the upstream, on the log line, exported as a websocket span', async (t) => {
  const otlp = await startOtlpReceiver()
  t.teardown(() => otlp.close())
  const { gw, up } = await world(t, `tracing: { otlp_endpoint: "${otlp.url}" }`)
  const { key, id } = await gw.fixtures.personalKey('alice')
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
  const client = await openClient(gw.port, '/api/v1/users', { key, headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, tracestate: 'rojo=1' } })
  t.teardown(() => client.socket.terminate())
  const seen = up.upgrades.at(-1)
  const values = (name: string): string[] => rawValues({ method: 'GET', url: '', headers: {}, body: Buffer.alloc(0), rawHeaders: seen?.rawHeaders ?? [] }, name)
  const forwarded = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(values('traceparent')[0] ?? '')
  t.equal(forwarded?.[1], traceId, 'the upstream\'s handshake carries the client\'s trace id')
  t.same(values('tracestate'), ['rojo=1'], 'and its tracestate')
  const line = await gw.logOf({ headers: { 'x-request-id': String(client.headers['x-request-id']) } } as unknown as RawResponse)
  t.equal(line?.trace_id, traceId, 'the log line carries the trace id')

  await gw.app.tracing.flush()
  const spans = otlp.spans.filter((s) => s.traceId === traceId)
  const server = spans.find((s) => s.kind === SPAN_KIND_SERVER)
  const upstreamCall = spans.find((s) => s.kind === SPAN_KIND_CLIENT)
  t.match(server, { name: 'GET /api/v1/*', attributes: { 'keygate.mode': 'websocket', 'keygate.decision': 'allow', 'keygate.reason': 'allowed', 'keygate.key_id': id, 'http.response.status_code': 101 } }, 'the upgrade is one SERVER span')
  t.equal(upstreamCall?.parentSpanId, server?.spanId, 'the upstream\'s handshake is its CLIENT child')
  t.equal(upstreamCall?.spanId, forwarded?.[2], 'the traceparent the upstream got names that CLIENT span')
  t.notOk(otlp.bodies.some((b) => b.toString('latin1').includes(key.slice(-20))), 'no key material exported')
})
