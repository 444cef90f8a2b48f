/**
 * The admin listener did not hold requests to the data plane's framing rules: node
 * kept 1,000 header fields and framed the body with all of them, answered an unknown
 * `Expect` with a bare 417 (no error object, no request id), sent `100 Continue`
 * before the admin credential was checked, and forwarded nothing but still read an
 * HTTP/1.0 chunked body. Now both listeners share src/pipeline/framing.ts.
 */
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'
import { rawRequest, req } from '../helpers/raw-http.js'
import { openConversation } from '../helpers/raw-socket.js'

const TOKEN = 'test-admin-token-0123456789abcdef'

t.test('the admin listener refuses what the data plane refuses, with the error object', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const auth: [string, string] = ['Authorization', `Bearer ${TOKEN}`]
  const filler: Array<[string, string]> = Array.from({ length: 120 }, (_, i) => [`X-Filler-${i}`, 'x'])
  const cases: Array<[string, string, number, string]> = [
    ['more header fields than limits.header_count', req('GET', '/admin/v1/session', [auth, ...filler]), 431, 'header_too_large'],
    ['HTTP/1.0 with Transfer-Encoding', `POST /admin/v1/roles/x HTTP/1.0\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400, 'bad_request'],
    ['an expectation other than 100-continue', req('GET', '/admin/v1/session', [auth, ['Expect', 'something-else']]), 417, 'expectation_failed'],
    ['a second Host', `GET /admin/v1/session HTTP/1.1\r\nHost: localhost\r\nHost: other\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`, 400, 'bad_request']
  ]
  for (const [name, raw, status, code] of cases) {
    await t.test(name, async (t) => {
      const res = await rawRequest(gw.adminPort, raw)
      t.equal(res.status, status)
      t.match(res.json(), { error: { code, status } }, 'the catalogue body')
      t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/, 'with a request id')
    })
  }
})

t.test('Expect: 100-continue on the admin API: the refusal first without a credential, 100 only once signed in', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const body = '{"permissions":["users:read"]}'

  await t.test('no credential: 401 first, no 100 Continue', async (t) => {
    const c = await openConversation(gw.adminPort)
    t.teardown(() => { c.socket.destroy() })
    c.write(`PUT /admin/v1/roles/viewer HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`)
    const text = await c.waitFor(/\r\n\r\n/)
    t.match(text, /^HTTP\/1\.1 401 /, 'the first thing sent is the final 401')
    t.notMatch(text, /HTTP\/1\.1 100/, 'no 100 Continue')
  })

  await t.test('the admin token: 100 Continue, then the body, then 200', async (t) => {
    const c = await openConversation(gw.adminPort)
    t.teardown(() => { c.socket.destroy() })
    c.write(`PUT /admin/v1/roles/viewer HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${TOKEN}\r\n` +
      `Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`)
    const interim = await c.waitFor(/\r\n\r\n/)
    t.match(interim, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, 'the interim 100 comes first, alone')
    c.write(body)
    await c.waitClosed()
    t.match(c.received(), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /, 'then the answer')
    t.equal(await gw.client.hget(`${gw.prefix}role:viewer`, 'permissions'), 'users:read', 'the body was read and applied')
  })
})
