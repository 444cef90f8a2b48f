/**
 * The request limits (docs/configuration.md, `limits`): request bodies stream to the upstream; a body
 * larger than the configured limit gets `413 payload_too_large`; oversized
 * headers are refused (`431 header_too_large`). Configured here with
 * `limits: { body_bytes: 1000, header_bytes: 4096 }`.
 *
 * Every request carries a valid key with the permission (bob: users:*), so a
 * 413 or 431 proves the limit, never authentication or authorization.
 */
import t from 'tap'
import type { Test } from 'tap'
import { createServer, type IncomingMessage } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { startGateway, eventually } from '../../helpers/gateway.js'
import { rawRequest, req, type RawResponse } from '../../helpers/raw-http.js'

const LIMITS = 'limits: { body_bytes: 1000, header_bytes: 4096 }\n'

function assertError (t: Test, res: RawResponse, status: number, code: string, message: string): void {
  t.equal(res.status, status, `status ${status}`)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8', 'JSON error content type')
  t.same(JSON.parse(res.body), { error: { code, message, status } }, `the catalogue body for ${status}`)
}

/** A body of `n` bytes that is easy to compare. */
function body (n: number, seed = 'x'): string {
  let s = ''
  for (let i = 0; s.length < n; i++) s += `${seed}${i % 10}`
  return s.slice(0, n)
}

/** The chunked transfer coding of `parts`, with the last chunk. */
function chunked (parts: string[]): string {
  return parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join('') + '0\r\n\r\n'
}

/** `total` bytes cut into chunks of `size`. */
function cut (total: string, size: number): string[] {
  const parts: string[] = []
  for (let i = 0; i < total.length; i += size) parts.push(total.slice(i, i + size))
  return parts
}

const settle = async (): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, 200)) }

t.test('request bodies over the limit: 413 payload_too_large, never forwarded', async (t) => {
  const gw = await startGateway(t, { yaml: LIMITS })
  const { key } = await gw.fixtures.personalKey('bob')
  const auth = `Bearer ${key}`

  await t.test('Content-Length: 1001, body sent', async (t) => {
    const before = gw.upstream.requests.length
    const res = await gw.send('POST', '/api/v1/users', { Authorization: auth, 'Content-Type': 'application/json' }, body(1001))
    assertError(t, res, 413, 'payload_too_large', 'Request body too large')
    await settle()
    t.equal(gw.upstream.requests.length, before, 'the upstream never received the request')
  })

  await t.test('a huge Content-Length is refused without waiting for the body', async (t) => {
    const before = gw.upstream.requests.length
    // no body bytes follow: the answer must come from the declared length alone
    const res = await rawRequest(gw.port, req('POST', '/api/v1/users', { Authorization: auth, 'Content-Length': '1000000000000' }), { timeoutMs: 3000 })
    assertError(t, res, 413, 'payload_too_large', 'Request body too large')
    t.equal(gw.upstream.requests.length, before, 'the upstream never received the request')
  })

  const chunkedCases: Array<[string, string[]]> = [
    ['three chunks of 400 bytes', cut(body(1200), 400)],
    ['one chunk of 1001 bytes', [body(1001)]],
    ['1000 bytes, then one more byte', [body(1000), 'z']],
    ['1001 chunks of one byte', cut(body(1001), 1)]
  ]
  for (const [name, parts] of chunkedCases) {
    await t.test(`chunked: ${name}`, async (t) => {
      const before = gw.upstream.requests.length
      const res = await gw.send('POST', '/api/v1/users', { Authorization: auth, 'Transfer-Encoding': 'chunked' }, chunked(parts))
      assertError(t, res, 413, 'payload_too_large', 'Request body too large')
      await settle()
      // The body streams, so the upstream may have seen its start; it must never
      // have been handed a complete (truncated) request.
      t.equal(gw.upstream.requests.length, before, 'the upstream never received a complete request')
    })
  }

  for (const contentType of ['application/json', 'text/plain', 'application/x-www-form-urlencoded']) {
    await t.test(`chunked ${contentType}: three chunks of 400 bytes`, async (t) => {
      const before = gw.upstream.requests.length
      const res = await gw.send('POST', '/api/v1/users', { Authorization: auth, 'Content-Type': contentType, 'Transfer-Encoding': 'chunked' }, chunked(cut(body(1200), 400)))
      assertError(t, res, 413, 'payload_too_large', 'Request body too large')
      await settle()
      t.equal(gw.upstream.requests.length, before, 'the upstream never received a complete request')
    })
  }
})

t.test('request bodies within the limit are forwarded intact', async (t) => {
  const gw = await startGateway(t, { yaml: LIMITS })
  const { key } = await gw.fixtures.personalKey('bob')
  const auth = `Bearer ${key}`

  await t.test('exactly 1000 bytes with Content-Length', async (t) => {
    const sent = body(1000, 'L')
    const res = await gw.send('POST', '/api/v1/users', { Authorization: auth, 'Content-Type': 'application/octet-stream' }, sent)
    t.equal(res.status, 200, 'forwarded')
    t.equal(gw.upstream.last()?.body.toString('utf8'), sent, 'the upstream received the body byte for byte')
  })

  await t.test('exactly 1000 bytes, chunked', async (t) => {
    const sent = body(1000, 'C')
    const res = await gw.send('POST', '/api/v1/users', { Authorization: auth, 'Transfer-Encoding': 'chunked' }, chunked(cut(sent, 300)))
    t.equal(res.status, 200, 'forwarded')
    t.equal(gw.upstream.last()?.body.toString('utf8'), sent, 'the upstream received the body byte for byte')
  })

  await t.test('900 bytes in uneven chunks', async (t) => {
    const sent = body(900, 'S')
    const parts = [sent.slice(0, 1), sent.slice(1, 257), sent.slice(257, 600), sent.slice(600)]
    const res = await gw.send('POST', '/api/v1/users', { Authorization: auth, 'Transfer-Encoding': 'chunked' }, chunked(parts))
    t.equal(res.status, 200, 'forwarded')
    t.equal(gw.upstream.last()?.body.toString('utf8'), sent, 'the upstream received the body byte for byte')
  })

  await t.test('a JSON body, chunked: streamed as sent, never parsed and re-serialised', async (t) => {
    const sent = '{ "name" : "x",\n  "pad": "' + 'J'.repeat(900) + '" }'
    const res = await gw.send('POST', '/api/v1/users', { Authorization: auth, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' }, chunked(cut(sent, 256)))
    t.equal(res.status, 200, 'forwarded')
    t.equal(gw.upstream.last()?.body.toString('utf8'), sent, 'the upstream received the body byte for byte, whitespace and all')
  })

  await t.test('text/plain that is not UTF-8: the bytes as sent, never decoded', async (t) => {
    const sent = Buffer.from('caf\xe9 na\xefve \xff\xfe', 'latin1')
    const head = `POST /api/v1/users HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${auth}\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Length: ${sent.length}\r\nConnection: close\r\n\r\n`
    const res = await rawRequest(gw.port, Buffer.concat([Buffer.from(head, 'latin1'), sent]))
    t.equal(res.status, 200, 'forwarded')
    t.ok(gw.upstream.last()?.body.equals(sent), 'the upstream received the bytes unchanged')
  })

  await t.test('binary bytes, every value 0-255', async (t) => {
    const sent = Buffer.from(Array.from({ length: 1000 }, (_v, i) => i % 256))
    const head = `POST /api/v1/users HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${auth}\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n`
    const res = await rawRequest(gw.port, Buffer.concat([Buffer.from(head, 'latin1'), sent]))
    t.equal(res.status, 200, 'forwarded')
    t.ok(gw.upstream.last()?.body.equals(sent), 'the upstream received the bytes unchanged')
  })
})

t.test('request bodies stream: the upstream sees the first chunk before the client has sent the rest', async (t) => {
  // A watching upstream: records bytes as they arrive, answers once the body ended.
  let seen = Buffer.alloc(0)
  let started = false
  const watcher = createServer((request: IncomingMessage, res) => {
    started = true
    request.on('data', (chunk: Buffer) => { seen = Buffer.concat([seen, chunk]) })
    request.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(`got ${seen.length}`)
    })
  })
  await new Promise<void>((resolve) => watcher.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    watcher.closeAllConnections()
    await new Promise<void>((resolve) => watcher.close(() => resolve()))
  })
  const watcherPort = (watcher.address() as AddressInfo).port

  const gw = await startGateway(t, {
    yaml: LIMITS,
    configure: (config) => {
      const core = config.upstreams.core
      if (core === undefined) throw new Error('no upstream "core"')
      core.url = `http://127.0.0.1:${watcherPort}`
    }
  })
  const { key } = await gw.fixtures.personalKey('bob')

  const first = body(300, 'A')
  const rest = body(600, 'B')
  const socket = connect({ port: gw.port, host: '127.0.0.1' })
  t.teardown(() => { socket.destroy() })
  let response = ''
  socket.on('data', (chunk: Buffer) => { response += chunk.toString('latin1') })
  const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()))
  await new Promise<void>((resolve) => socket.on('connect', () => resolve()))

  socket.write(`POST /api/v1/users HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n` +
    `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunked([first]).slice(0, -5)}`)
  const waited = await eventually(async () => seen.length >= first.length, 3000)
  t.ok(started, 'the upstream request started while the client was still sending')
  t.not(waited, -1, 'the first 300 bytes reached the upstream before the client sent the rest')
  t.equal(seen.toString('latin1'), first, 'and they arrived intact')
  t.equal(response, '', 'the client has no answer yet')

  socket.write(chunked([rest]))
  await closed
  t.match(response, /^HTTP\/1\.1 200 /, 'forwarded')
  t.equal(seen.toString('latin1'), first + rest, 'the upstream received the whole body, in order')
})

t.test('request headers over the limit: 431 header_too_large', async (t) => {
  const gw = await startGateway(t, { yaml: LIMITS })
  const { key } = await gw.fixtures.personalKey('alice')
  const auth = `Bearer ${key}`

  await t.test('control: 3000 bytes of headers are accepted', async (t) => {
    const res = await gw.send('GET', '/api/v1/users', { Authorization: auth, 'X-Pad': 'p'.repeat(3000) })
    t.equal(res.status, 200, 'forwarded')
  })

  const cases: Array<[string, Array<[string, string]>]> = [
    ['one 5000-byte header', [['X-Pad', 'p'.repeat(5000)]]],
    ['many small headers totalling more than 4096 bytes', Array.from({ length: 100 }, (_v, i): [string, string] => [`X-Pad-${i}`, 'p'.repeat(50)])],
    ['a 5000-byte Authorization header', [['Authorization', 'Bearer ' + 'A'.repeat(5000)]]],
    ['a 100 000-byte header', [['X-Pad', 'p'.repeat(100_000)]]]
  ]
  for (const [name, headers] of cases) {
    await t.test(name, async (t) => {
      const before = gw.upstream.requests.length
      const sendsAuth = headers.some(([n]) => n === 'Authorization')
      const res = await gw.send('GET', '/api/v1/users', sendsAuth ? headers : [['Authorization', auth], ...headers])
      assertError(t, res, 431, 'header_too_large', 'Request headers too large')
      t.equal(gw.upstream.requests.length, before, 'never forwarded')
    })
  }
})
