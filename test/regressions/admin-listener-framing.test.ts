/**
 * The admin listener did not apply the request-framing checks of the data plane's
 * first hook: more fields than `limits.header_count`, two Host headers and HTTP/1.0
 * with Transfer-Encoding reached the admin API, and node answered an `Expect` other
 * than 100-continue itself with a bare 417 (no error object, no request id), and
 * `Expect: 100-continue` with `100 Continue` before sign-in. Now both listeners run
 * the same stage (src/http/framing.ts): 431, 400, 400 and 417 with the
 * catalogue's error object, and `100 Continue` only after a successful sign-in.
 */
import t from 'tap'
import type { Test } from 'tap'
import { startGateway } from '../helpers/gateway.js'
import { rawRequest, req, type RawResponse } from '../helpers/raw-http.js'
import { openConversation } from '../helpers/raw-socket.js'

const TOKEN = 'admin-listener-framing-token-0123456789'

function assertError (t: Test, res: RawResponse, status: number, code: string, closed: boolean): void {
  t.equal(res.status, status, `status ${status}`)
  t.match(res.json(), { error: { code, status } }, `the catalogue's ${code} object`)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.match(res.headers['x-request-id'] ?? '', /^[0-9a-f-]{36}$/, 'a request id')
  if (closed) t.ok(res.closed, 'the connection is closed')
}

const filler = (n: number): Array<[string, string]> => Array.from({ length: n }, (_v, i): [string, string] => [`X-F${i}`, 'f'])

t.test('the admin listener refuses what the data plane refuses, with the error object', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN }, yaml: 'limits: { header_count: 50, header_bytes: 65536 }\n' })
  const auth: [string, string] = ['Authorization', `Bearer ${TOKEN}`]

  await t.test('control: the token lists roles', async (t) => {
    const res = await rawRequest(gw.adminPort, req('GET', '/admin/v1/roles', [auth]))
    t.equal(res.status, 200)
  })

  await t.test('more fields than limits.header_count: 431, closed', async (t) => {
    const res = await rawRequest(gw.adminPort, req('GET', '/admin/v1/roles', [auth, ...filler(60)]))
    assertError(t, res, 431, 'header_too_large', true)
  })

  await t.test('more fields than limits.header_count on /healthz too', async (t) => {
    const res = await rawRequest(gw.adminPort, req('GET', '/healthz', filler(60)))
    assertError(t, res, 431, 'header_too_large', true)
  })

  await t.test('two Host headers: 400', async (t) => {
    const res = await rawRequest(gw.adminPort, 'GET /admin/v1/roles HTTP/1.1\r\nHost: a\r\nHost: b\r\n' + `Authorization: Bearer ${TOKEN}\r\nConnection: close\r\n\r\n`)
    assertError(t, res, 400, 'bad_request', false)
  })

  await t.test('HTTP/1.0 with Transfer-Encoding: 400, closed, nothing written', async (t) => {
    const body = JSON.stringify({ permissions: ['x:read'] })
    const raw = `PUT /admin/v1/roles/framing HTTP/1.0\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`
    const res = await rawRequest(gw.adminPort, raw)
    assertError(t, res, 400, 'bad_request', true)
    const roles = await rawRequest(gw.adminPort, req('GET', '/admin/v1/roles', [auth]))
    t.notMatch(roles.body, /"framing"/, 'the role was not created')
  })

  for (const value of ['something-else', 'foo, 100-continue', '']) {
    await t.test(`Expect: ${JSON.stringify(value)}: 417 with the error object, never node's bare 417`, async (t) => {
      const res = await rawRequest(gw.adminPort, req('PUT', '/admin/v1/roles/framing', [auth, ['Expect', value], ['Content-Type', 'application/json']], '{"permissions":[]}'))
      assertError(t, res, 417, 'expectation_failed', true)
    })
  }
})

t.test('Expect: 100-continue on the admin API: 100 Continue only after sign-in', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const body = '{"permissions":["x:read"]}'

  await t.test('a bad credential: the final 401 first, never 100', async (t) => {
    const c = await openConversation(gw.adminPort)
    t.teardown(() => { c.socket.destroy() })
    c.write('PUT /admin/v1/roles/framing HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer not-the-token\r\n' +
      `Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)
    const text = await c.waitFor(/\r\n\r\n/)
    t.match(text, /^HTTP\/1\.1 401 /, 'the first thing sent is the final 401')
    t.notMatch(text, /HTTP\/1\.1 100/, 'no 100 Continue')
  })

  await t.test('the admin token: 100 Continue, then the body, then 200', async (t) => {
    const c = await openConversation(gw.adminPort)
    t.teardown(() => { c.socket.destroy() })
    c.write(`PUT /admin/v1/roles/framing HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      `Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`)
    const interim = await c.waitFor(/\r\n\r\n/)
    t.match(interim, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, 'the interim 100 comes first, alone')
    c.write(body)
    await c.waitClosed()
    t.match(c.received(), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 20[01] /, 'then the final answer: the role was written')
  })
})
