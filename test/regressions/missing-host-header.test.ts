// An HTTP/1.1 request without `Host` got node's own bare `400` (no error object, no
// X-Request-Id, no log line) on every listener: node's server refuses it before any
// hook runs. The contract makes every error the gateway produces one of its catalogue,
// with a request id, and logged. Found by the data plane's header fuzz test
// (test/integration/fuzz/). HTTP/1.0 has no Host requirement and is still served.
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'
import { rawRequest } from '../helpers/raw-http.js'

const BAD_REQUEST = JSON.stringify({ error: { code: 'bad_request', message: 'Malformed request', status: 400 } })

t.test('HTTP/1.1 without Host: the catalogue\'s 400 on every listener, logged by the request front ends', async (t) => {
  const gw = await startGateway(t, { yaml: 'authz_listen: "127.0.0.1:0"\n' })
  const { key } = await gw.fixtures.personalKey('alice')
  const listeners: Array<[string, number]> = [
    ['data plane', gw.port], ['authorizer', gw.authzPort], ['admin', gw.adminPort]
  ]
  for (const [name, port] of listeners) {
    const before = gw.upstream.requests.length
    const res = await rawRequest(port, `GET /api/v1/users HTTP/1.1\r\nAuthorization: Bearer ${key}\r\n` +
      'Connection: close\r\n\r\n')
    t.equal(res.status, 400, `${name}: 400`)
    t.equal(res.body, BAD_REQUEST, `${name}: the catalogue's body`)
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8', `${name}: JSON`)
    t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/, `${name}: a request id`)
    if (name !== 'admin') { // (the admin listener logs its API's requests only)
      const line = await gw.logOf(res)
      t.equal(line?.status, 400, `${name}: logged`)
      t.equal(line?.reason, 'bad_request', `${name}: reason bad_request`)
    }
    t.equal(gw.upstream.requests.length, before, `${name}: nothing reached the upstream`)
  }
  const old = await rawRequest(gw.port, `GET /api/v1/users HTTP/1.0\r\nAuthorization: Bearer ${key}\r\n\r\n`)
  t.equal(old.status, 200, 'HTTP/1.0 without Host is served')
})
