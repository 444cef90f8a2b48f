// What a refused or declined upgrade writes on the raw socket.
import t from 'tap'
import { PassThrough } from 'node:stream'
import { passUpstreamAnswer, refuseUpgrade, responseHeaders } from '../../../src/websocket/respond.js'

async function written (write: (socket: PassThrough) => number): Promise<{ status: number, text: string, ended: boolean }> {
  const socket = new PassThrough()
  const chunks: Buffer[] = []
  socket.on('data', (c: Buffer) => chunks.push(c))
  let ended = false
  socket.on('finish', () => { ended = true })
  const status = write(socket)
  await new Promise((resolve) => setImmediate(resolve))
  return { status, text: Buffer.concat(chunks).toString('latin1'), ended }
}

t.test('a refusal: the catalogue\'s error object, the request id, the extra headers, and the connection closes', async (t) => {
  const { status, text, ended } = await written((s) => refuseUpgrade(s, 'unauthorized', 'rid-1', { 'WWW-Authenticate': 'Bearer realm="keygate"' }))
  t.equal(status, 401)
  const [head, body] = text.split('\r\n\r\n') as [string, string]
  t.equal(head.split('\r\n')[0], 'HTTP/1.1 401 Unauthorized')
  t.match(head, /\r\nContent-Type: application\/json; charset=utf-8\r\n/)
  t.match(head, /\r\nX-Request-Id: rid-1\r\n/)
  t.match(head, /\r\nWWW-Authenticate: Bearer realm="keygate"\r\n/)
  t.match(head, /\r\nConnection: close$/)
  t.match(head, new RegExp(`\\r\\nContent-Length: ${Buffer.byteLength(body)}\\r\\n`))
  t.same(JSON.parse(body), { error: { code: 'unauthorized', message: 'Invalid or missing authentication key', status: 401 } })
  t.ok(ended, 'ended')
})

t.test('an upstream\'s answer: its status, headers and body, without hop-by-hop headers, with the gateway\'s own', async (t) => {
  const raw = ['Content-Type', 'text/plain', 'Connection', 'close, X-Secret-Hop', 'X-Secret-Hop', 'a', 'Keep-Alive', 'timeout=5', 'Transfer-Encoding', 'chunked', 'X-Request-Id', 'upstream-id', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2', 'RateLimit-Limit', '999']
  const { status, text } = await written((s) => passUpstreamAnswer(s, 404, raw, Buffer.from('nope'), 'rid-2', { 'ratelimit-limit': '5' }))
  t.equal(status, 404)
  const [head, body] = text.split('\r\n\r\n') as [string, string]
  const lines = head.split('\r\n')
  t.equal(lines[0], 'HTTP/1.1 404 Not Found')
  t.same(lines.slice(1), ['Content-Type: text/plain', 'Set-Cookie: a=1', 'Set-Cookie: b=2', 'ratelimit-limit: 5', 'Content-Length: 4', 'X-Request-Id: rid-2', 'Connection: close'])
  t.equal(body, 'nope')
})

t.test('responseHeaders drops hop-by-hop headers, those Connection lists, and those asked', async (t) => {
  t.same(responseHeaders(['Upgrade', 'websocket', 'Sec-WebSocket-Accept', 'x', 'Server', 'up', 'connection', 'Upgrade'], ['sec-websocket-accept']), [['Server', 'up']])
})
