/**
 * No timeout covered a request head or body: an authenticated client that sent a
 * body slowly (or stopped) held an upstream connection for as long as it liked.
 * Now a head not complete within `limits.header_timeout_ms` and a body idle for
 * `limits.body_idle_timeout_ms` get `408 request_timeout`; the upstream request is
 * aborted and its connection released; the log line says `request_timeout`.
 */
import t from 'tap'
import type { Test } from 'tap'
import { startGateway, eventually, type TestGateway } from '../helpers/gateway.js'
import { openConversation } from '../helpers/raw-socket.js'
import { startWatchingUpstream, type WatchingUpstream } from '../helpers/watching-upstream.js'

const REQUEST_TIMEOUT = { error: { code: 'request_timeout', message: 'Request timed out', status: 408 } }
const LIMITS = 'limits: { header_timeout_ms: 400, body_idle_timeout_ms: 400 }\n'

/** The status, headers and JSON body of the one response in `text`. */
function parse (text: string): { status: number, headers: Record<string, string>, body: unknown } {
  const [head = '', body = ''] = text.split('\r\n\r\n', 2)
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim()
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) }
}

async function watched (t: Test): Promise<{ gw: TestGateway, watcher: WatchingUpstream }> {
  const watcher = await startWatchingUpstream()
  t.teardown(() => watcher.close())
  const gw = await startGateway(t, {
    yaml: LIMITS,
    configure: (config) => {
      const core = config.upstreams.core
      if (core === undefined) throw new Error('no upstream "core"')
      core.url = watcher.url
    }
  })
  return { gw, watcher }
}

t.test('a request head that never completes: 408 request_timeout, logged', async (t) => {
  const { gw } = await watched(t)
  const c = await openConversation(gw.port)
  t.teardown(() => { c.socket.destroy() })
  c.write('GET /api/v1/users HTTP/1.1\r\nHost: localhost\r\nX-Slow: ')
  await c.waitClosed()
  const res = parse(c.received())
  t.equal(res.status, 408, 'status 408')
  t.same(res.body, REQUEST_TIMEOUT, 'the catalogue body')
  const id = res.headers['x-request-id']
  t.ok(id, 'a request id')
  t.equal(gw.logs.find((l) => l.req_id === id)?.reason, 'request_timeout', 'logged as request_timeout')
})

t.test('an authenticated body that stops: 408, the upstream request aborted, its connection released', async (t) => {
  const { gw, watcher } = await watched(t)
  const { key } = await gw.fixtures.personalKey('bob')
  for (const [name, framing, first] of [
    ['Content-Length', 'Content-Length: 100\r\n', 'x'.repeat(10)],
    ['chunked', 'Transfer-Encoding: chunked\r\n', 'a\r\n' + 'x'.repeat(10) + '\r\n']
  ] as const) {
    await t.test(name, async (t) => {
      const before = watcher.requests.length
      const c = await openConversation(gw.port)
      t.teardown(() => { c.socket.destroy() })
      c.write(`POST /api/v1/users HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n${framing}\r\n${first}`)
      t.not(await eventually(async () => (watcher.requests[before]?.bytes ?? 0) >= 10, 3000), -1, 'the first bytes reached the upstream')
      // ...and then the client sends nothing more
      await c.waitClosed()
      const res = parse(c.received())
      t.equal(res.status, 408, 'status 408')
      t.same(res.body, REQUEST_TIMEOUT, 'the catalogue body')
      t.not(await eventually(async () => watcher.requests[before]?.aborted === true, 3000), -1, 'the upstream saw the request aborted')
      t.notOk(watcher.requests[before]?.ended, 'never a complete request')
      // (the connection that carried the aborted request closes; undici may open a fresh, idle one to the upstream
      // right after, as after any request: that one carries nothing of this request)
      t.not(await eventually(async () => watcher.requests[before]?.connectionClosed === true, 3000), -1,
        'the upstream connection was released')
      await eventually(async () => gw.logs.some((l) => l.req_id === res.headers['x-request-id']), 2000)
      const line = gw.logs.find((l) => l.req_id === res.headers['x-request-id'])
      t.equal(line?.reason, 'request_timeout', 'logged as request_timeout')
      t.equal(line?.status, 408)
    })
  }
})

t.test('a body that keeps coming, slower than the whole timeout but never idle that long, is forwarded', async (t) => {
  const { gw, watcher } = await watched(t)
  const { key } = await gw.fixtures.personalKey('bob')
  const c = await openConversation(gw.port)
  t.teardown(() => { c.socket.destroy() })
  c.write(`POST /api/v1/users HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nContent-Length: 6\r\nConnection: close\r\n\r\n`)
  for (let i = 0; i < 6; i++) {
    await new Promise((resolve) => setTimeout(resolve, 150))
    c.write('x')
  }
  await c.waitClosed()
  t.match(c.received(), /^HTTP\/1\.1 200 /, 'forwarded')
  t.equal(watcher.requests.at(-1)?.bytes, 6, 'the whole body reached the upstream')
})
