/**
 * CORS (docs/configuration.md#cors), over raw sockets, against real Redis and a real
 * upstream: off by default (OPTIONS authenticated like any method); on, the gateway
 * answers preflights itself without a credential and never forwards them, and every
 * other response to an allowed origin, its own errors included, carries the
 * gateway's CORS headers, never the upstream's.
 *
 * The tests of CORS_YAML share one gateway; each counts the upstream's requests from
 * its own start, and the one that changes what the upstream answers puts it back.
 */
import t from 'tap'
import { parseConfig } from '../../../src/config/load.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'

const APP = 'https://app.example.com'
const CORS_YAML = `cors: { allowed_origins: ["${APP}"], max_age_s: 120 }`

/** the gateway of the tests on CORS_YAML */
let gw: TestGateway
t.before(async () => { gw = await startGateway(t, { yaml: CORS_YAML }) })

function preflight (origin: string, method = 'GET', headers = 'authorization'): Record<string, string> {
  return { Origin: origin, 'Access-Control-Request-Method': method, 'Access-Control-Request-Headers': headers }
}

t.test('off by default: a preflight is an unauthenticated OPTIONS (401), and no CORS header is added', async (t) => {
  const gw = await startGateway(t)
  const { key } = await gw.fixtures.personalKey('alice')
  const res = await gw.send('OPTIONS', '/api/v1/users', preflight(APP))
  t.equal(res.status, 401)
  t.equal(res.headers['access-control-allow-origin'], undefined)
  t.equal(gw.upstream.requests.length, 0, 'nothing reached the upstream')
  gw.upstream.setMode({ kind: 'status', status: 200, body: '{}', headers: { 'Access-Control-Allow-Origin': '*' } })
  const ok = await gw.get('/api/v1/users', key, { Origin: APP })
  t.equal(ok.status, 200)
  t.equal(ok.headers['access-control-allow-origin'], '*', 'with CORS off the upstream\'s own headers pass through unchanged')
})

t.test('on: preflights from an allowed origin are answered by the gateway, without a key', async (t) => {
  const forwarded = gw.upstream.requests.length
  const res = await gw.send('OPTIONS', '/api/v1/users', preflight(APP, 'POST', 'Authorization, Content-Type'))
  t.equal(res.status, 204)
  t.equal(res.headers['access-control-allow-origin'], APP)
  t.equal(res.headers['access-control-allow-methods'], 'GET, HEAD, POST, PUT, PATCH, DELETE')
  t.equal(res.headers['access-control-allow-headers'], 'authorization, content-type')
  t.equal(res.headers['access-control-max-age'], '120')
  t.equal(res.headers['access-control-allow-credentials'], undefined)
  t.match(res.headers.vary, /Origin/)
  t.ok(res.headers['x-request-id'])
  t.equal(res.body, '')
  t.equal(gw.upstream.requests.length, forwarded, 'a preflight is never forwarded')
  t.match(await gw.logOf(res), { status: 204, reason: 'cors_preflight' })
})

t.test('on: a preflight from another origin, or for a method or header not allowed, is 403 with no CORS header', async (t) => {
  const forwarded = gw.upstream.requests.length
  const cases: Array<[string, Record<string, string>]> = [
    ['another origin', preflight('https://evil.example')],
    ['the allowed origin with another port', preflight('https://app.example.com:8443')],
    ['a method not allowed', preflight(APP, 'CONNECT')],
    ['a header not allowed', preflight(APP, 'GET', 'authorization, x-admin')]
  ]
  for (const [label, headers] of cases) {
    const res = await gw.send('OPTIONS', '/api/v1/users', headers)
    t.equal(res.status, 403, label)
    t.equal(res.headers['access-control-allow-origin'], undefined, `${label}: no CORS header`)
    t.match(res.json(), { error: { code: 'forbidden', status: 403 } })
    t.match(await gw.logOf(res), { reason: 'cors_refused' })
  }
  t.equal(gw.upstream.requests.length, forwarded)
})

t.test('on: an OPTIONS that is not a preflight is still authenticated and rule-checked', async (t) => {
  const forwarded = gw.upstream.requests.length
  t.equal((await gw.send('OPTIONS', '/api/v1/users', { Origin: APP })).status, 401, 'no Access-Control-Request-Method: not a preflight')
  t.equal((await gw.send('OPTIONS', '/api/v1/users', { 'Access-Control-Request-Method': 'GET' })).status, 401, 'no Origin: not a preflight')
  t.equal(gw.upstream.requests.length, forwarded)
})

t.test('on: responses to an allowed origin carry the gateway\'s CORS headers, its own errors included', async (t) => {
  t.teardown(() => { gw.upstream.setMode({ kind: 'echo' }) })
  const { key } = await gw.fixtures.personalKey('alice')

  const denied = await gw.send('GET', '/api/v1/users', { Origin: APP })
  t.equal(denied.status, 401)
  t.equal(denied.headers['access-control-allow-origin'], APP, 'a browser can read why it was refused')
  t.equal(denied.headers['access-control-expose-headers'], 'X-Request-Id')
  t.match(denied.headers.vary, /Origin/)

  const forbidden = await gw.get('/api/v1/admin/x', key, { Origin: APP })
  t.equal(forbidden.status, 403)
  t.equal(forbidden.headers['access-control-allow-origin'], APP)

  // the upstream tries to allow every origin, and credentials: the gateway's policy wins
  gw.upstream.setMode({
    kind: 'status',
    status: 200,
    body: '{}',
    headers: { 'Access-Control-Allow-Origin': '*', 'Access-Control-Allow-Credentials': 'true', 'Access-Control-Allow-Methods': 'DELETE', Vary: 'Accept-Encoding' }
  })
  const ok = await gw.get('/api/v1/users', key, { Origin: APP })
  t.equal(ok.status, 200)
  t.equal(ok.headers['access-control-allow-origin'], APP)
  t.equal(ok.headers['access-control-allow-credentials'], undefined, 'the upstream\'s Access-Control-* headers are dropped')
  t.equal(ok.headers['access-control-allow-methods'], undefined)
  t.equal(ok.headers.vary, 'Accept-Encoding, Origin', 'Vary keeps the upstream\'s value and adds Origin')

  const other = await gw.get('/api/v1/users', key, { Origin: 'https://evil.example' })
  t.equal(other.status, 200, 'CORS is for browsers: the key still decides')
  t.equal(other.headers['access-control-allow-origin'], undefined, 'another origin gets no CORS header')
  t.equal(other.headers['access-control-allow-credentials'], undefined)
  t.match(other.headers.vary, /Origin/)
})

t.test('"*" allows any origin; credentials need listed origins', async (t) => {
  const gw = await startGateway(t, { yaml: 'cors: { allowed_origins: ["*"] }' })
  const res = await gw.send('OPTIONS', '/api/v1/users', preflight('https://anywhere.example'))
  t.equal(res.status, 204)
  t.equal(res.headers['access-control-allow-origin'], '*')

  const yaml = (cors: string): string => `
upstreams: { core: { url: "http://127.0.0.1:1" } }
routes: [{ prefix: /api/v1, upstream: core }]
cors: ${cors}
`
  t.throws(() => parseConfig(yaml('{ allowed_origins: ["*"], allow_credentials: true }'), {}, 'test'), /cors\.allow_credentials/)
  t.throws(() => parseConfig(yaml('{ allowed_origins: ["https://app.example.com/path"] }'), {}, 'test'), /cors\.allowed_origins\[0\]/)
  t.throws(() => parseConfig(yaml('{ allowed_origins: ["app.example.com"] }'), {}, 'test'), /cors\.allowed_origins\[0\]/)
  t.doesNotThrow(() => parseConfig(yaml('{ allowed_origins: ["https://app.example.com", "http://localhost:5173"], allow_credentials: true }'), {}, 'test'))
})
