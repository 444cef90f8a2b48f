// Proves test/helpers/raw-http.ts sends bytes unchanged and parses responses
// (Content-Length, chunked, until-close, duplicates, empty close, timeout).
import t from 'tap'
import type { Test } from 'tap'
import { createServer } from 'node:net'
import type { AddressInfo, Server, Socket } from 'node:net'
import { rawRequest, req, send } from './raw-http.js'
import { startUpstream } from './upstream.js'

/** A TCP server that answers every connection with `reply` (once the request head arrived). */
async function rawServer (t: Test, reply: (socket: Socket) => void): Promise<number> {
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let head = ''
    let replied = false
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1')
      if (!replied && head.includes('\r\n\r\n')) {
        replied = true
        reply(socket)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return (server.address() as AddressInfo).port
}

t.test('req() builds requests exactly as given', async (t) => {
  t.equal(req('GET', '/a/../b'), 'GET /a/../b HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
  t.equal(
    req('POST', '/x', [['hOsT', 'evil'], ['X-A', ' spaced '], ['X-A', 'dup']], 'héllo'),
    'POST /x HTTP/1.1\r\nhOsT: evil\r\nX-A:  spaced \r\nX-A: dup\r\nConnection: close\r\nContent-Length: 6\r\n\r\nhéllo'
  )
  t.equal(
    req('POST', '/x', { 'Transfer-Encoding': 'chunked', connection: 'keep-alive' }, '0\r\n\r\n'),
    'POST /x HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\nconnection: keep-alive\r\n\r\n0\r\n\r\n'
  )
  t.equal(
    req('POST', '/x', { 'content-length': '1' }, 'abc'),
    'POST /x HTTP/1.1\r\nHost: localhost\r\ncontent-length: 1\r\nConnection: close\r\n\r\nabc'
  )
})

t.test('dot segments and odd targets reach the upstream byte for byte', async (t) => {
  const upstream = await startUpstream()
  t.teardown(() => upstream.close())
  for (const target of ['/a/../b', '/a/./b/%2e%2e/c', '//double//slash', '/p?x=1&x=2#frag', '/%2F..%5c']) {
    const res = await send(upstream.port, 'GET', target)
    t.equal(res.status, 200, target)
    t.equal(res.headers['x-upstream'], 'yes')
    t.equal(upstream.last()?.url, target)
    t.match(res.json(), { method: 'GET', url: target })
  }
  t.equal(upstream.requests.length, 5)
})

t.test('request bytes are written unchanged, headers too', async (t) => {
  const upstream = await startUpstream()
  t.teardown(() => upstream.close())
  const res = await rawRequest(upstream.port, Buffer.from(
    'POST /u HTTP/1.1\r\nHost: h\r\nX-Mixed-Case: 1\r\nX-Dup: a\r\nX-Dup: b\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc'
  ))
  t.equal(res.status, 200)
  t.equal(res.closed, true)
  const last = upstream.last()
  t.equal(last?.body.toString(), 'abc')
  t.same(last?.rawHeaders.slice(0, 8), ['Host', 'h', 'X-Mixed-Case', '1', 'X-Dup', 'a', 'X-Dup', 'b'])
  t.equal(last?.headers['x-dup'], 'a, b')
})

t.test('chunked responses are decoded, also when split across packets', async (t) => {
  const response = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n' +
    '5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n'
  const port = await rawServer(t, (socket) => {
    // Dribble the response out in small pieces; the socket stays open, so
    // the client must finish on the terminating chunk, not on close.
    const pieces = response.match(/[\s\S]{1,7}/g) ?? []
    const next = (): void => {
      const piece = pieces.shift()
      if (piece !== undefined && !socket.destroyed) socket.write(piece, () => setTimeout(next, 2))
    }
    next()
  })
  const res = await send(port, 'GET', '/')
  t.equal(res.status, 200)
  t.equal(res.statusText, 'OK')
  t.equal(res.body, 'hello world')
  t.equal(res.closed, false)
})

t.test('duplicate response headers are kept in rawHeaders', async (t) => {
  const port = await rawServer(t, (socket) => {
    socket.end('HTTP/1.1 201 Created\r\nSet-Cookie: a=1\r\nX-Thing: one\r\nset-cookie: b=2\r\nContent-Length: 2\r\n\r\nok')
  })
  const res = await send(port, 'GET', '/')
  t.equal(res.status, 201)
  t.equal(res.statusText, 'Created')
  t.same(res.rawHeaders, [['Set-Cookie', 'a=1'], ['X-Thing', 'one'], ['set-cookie', 'b=2'], ['Content-Length', '2']])
  t.equal(res.headers['set-cookie'], 'a=1, b=2')
  t.equal(res.body, 'ok')
})

t.test('interim 100 responses are skipped, body read until close without framing', async (t) => {
  const port = await rawServer(t, (socket) => {
    socket.write('HTTP/1.1 100 Continue\r\n\r\n')
    socket.end('HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close')
  })
  const res = await send(port, 'GET', '/')
  t.equal(res.status, 200)
  t.equal(res.body, 'until close')
  t.equal(res.closed, true)
})

t.test('HEAD responses have no body even with Content-Length', async (t) => {
  const port = await rawServer(t, (socket) => {
    socket.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n') // and keep the socket open
  })
  const res = await send(port, 'HEAD', '/')
  t.equal(res.status, 200)
  t.equal(res.body, '')
})

t.test('close without any bytes resolves with status 0', async (t) => {
  const port = await rawServer(t, (socket) => socket.destroy())
  const res = await send(port, 'GET', '/')
  t.equal(res.status, 0)
  t.equal(res.closed, true)
  t.throws(() => res.json())
})

t.test('timeout rejects instead of hanging', async (t) => {
  const port = await rawServer(t, () => {})
  await t.rejects(rawRequest(port, req('GET', '/'), { timeoutMs: 200 }), /timed out/)
})

t.test('truncated response rejects', async (t) => {
  const port = await rawServer(t, (socket) => socket.end('HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc'))
  await t.rejects(send(port, 'GET', '/'), /3 of 10/)
})
