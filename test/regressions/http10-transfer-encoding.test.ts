/**
 * An HTTP/1.0 request carrying Transfer-Encoding was forwarded. HTTP/1.0 has no
 * chunked coding, so a peer that frames such a message by Content-Length or by the
 * close reads a different message from the gateway: RFC 9112 section 6.1 says to
 * treat it as faulty and close the connection. Now: 400 bad_request, closed.
 */
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'
import { rawRequest } from '../helpers/raw-http.js'

t.test('HTTP/1.0 with Transfer-Encoding: 400, the connection closed, nothing forwarded', async (t) => {
  const gw = await startGateway(t)
  const { key } = await gw.fixtures.personalKey('bob')
  const smuggled = 'GET /api/v1/users HTTP/1.1\r\nHost: localhost\r\n\r\n'
  const cases: Array<[string, string]> = [
    ['chunked', 'Transfer-Encoding: chunked\r\n'],
    ['chunked, keep-alive asked for', 'Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n'],
    ['chunked, lower case', 'transfer-encoding: chunked\r\n'],
    ['gzip, chunked', 'Transfer-Encoding: gzip, chunked\r\n']
  ]
  for (const [name, te] of cases) {
    await t.test(name, async (t) => {
      const before = gw.upstream.requests.length
      const raw = `POST /api/v1/users HTTP/1.0\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\n${te}\r\n5\r\nhello\r\n0\r\n\r\n${smuggled}`
      const res = await rawRequest(gw.port, raw)
      t.equal(res.status, 400, 'status 400')
      t.same(res.json(), { error: { code: 'bad_request', message: 'Malformed request', status: 400 } }, 'the catalogue body')
      t.ok(res.closed, 'the connection is closed')
      t.ok(res.headers['x-request-id'], 'a request id')
      await new Promise((resolve) => setTimeout(resolve, 100))
      t.equal(gw.upstream.requests.length, before, 'nothing was forwarded')
    })
  }

  await t.test('control: HTTP/1.0 with Content-Length is forwarded', async (t) => {
    const raw = `POST /api/v1/users HTTP/1.0\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nContent-Length: 5\r\n\r\nhello`
    const res = await rawRequest(gw.port, raw)
    t.equal(res.status, 200, 'forwarded')
    t.equal(gw.upstream.last()?.body.toString(), 'hello', 'with its body')
  })
})
