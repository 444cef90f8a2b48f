// A last segment that ends with `..` was forwarded. docs/security.md refuses segments that
// start or end with `..` (`...`, `..foo`, `foo..`) with 400, before any Redis lookup, and
// the check caught `foo..` only when a `/` followed it: `/api/v1/users..` reached the
// upstream. Found by the data plane's fuzz test (test/integration/fuzz/). The data plane
// and the authorizer share the target policy; both are checked here.
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'
import { rawRequest } from '../helpers/raw-http.js'

const BAD_REQUEST = JSON.stringify({ error: { code: 'bad_request', message: 'Malformed request', status: 400 } })

t.test('a path whose last segment ends with .. is refused with 400 on both front ends', async (t) => {
  const gw = await startGateway(t, { yaml: 'authz_listen: "127.0.0.1:0"\n' })
  await gw.fixtures.user('root', 'acme', 'admin')
  const { key } = await gw.fixtures.personalKey('root')
  for (const target of ['/api/v1/users..', '/api/v1/orgs/acme/x..', '/api/v1/open/a.b..', '/api/v1/open/%2e%2e%2E']) {
    const before = gw.upstream.requests.length
    const res = await gw.get(target, key)
    t.equal(res.status, 400, `data plane ${target}: 400`)
    t.equal(res.body, BAD_REQUEST, `data plane ${target}: the catalogue's body`)
    t.equal(gw.upstream.requests.length, before, `data plane ${target}: nothing reached the upstream`)
    const decision = await rawRequest(gw.authzPort,
      'GET /_keygate HTTP/1.1\r\nHost: keygate\r\nX-Original-Method: GET\r\n' +
      `X-Original-URI: ${target}\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`)
    t.equal(decision.status, 400, `authorizer ${target}: 400`)
  }
  t.equal((await gw.get('/api/v1/open/a..b', key)).status, 200, '`..` inside a segment is no dot segment: allowed')
})
