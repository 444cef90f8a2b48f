// The errors table (docs/errors.md): every error the gateway itself produces is one uniform JSON
// body per status, `{"error":{"code","message","status"}}`, served as
// `application/json; charset=utf-8`; every response (errors, proxied responses)
// carries the gateway's X-Request-Id; responses from the upstream itself pass
// through unchanged and are never retried.
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'
import { rawRequest, type RawResponse } from '../../helpers/raw-http.js'

const gw = await startGateway(t, { yaml: 'limits: { body_bytes: 100 }\n' })
const reader = (await gw.fixtures.personalKey('carol')).key // orgreader: no users:* permission
const writer = (await gw.fixtures.personalKey('bob')).key // users:*
const JSON_TYPE = 'application/json; charset=utf-8'

const CATALOGUE: Record<number, { code: string, message: string }> = {
  400: { code: 'bad_request', message: 'Malformed request' },
  401: { code: 'unauthorized', message: 'Invalid or missing authentication key' },
  403: { code: 'forbidden', message: 'Insufficient permissions for this resource' },
  404: { code: 'not_found', message: 'Resource not found' },
  413: { code: 'payload_too_large', message: 'Request body too large' },
  431: { code: 'header_too_large', message: 'Request headers too large' }
}

interface Row {
  what: string
  status: number
  request: () => Promise<RawResponse>
}

const chunked = (size: number): string => `${size.toString(16)}\r\n${'a'.repeat(size)}\r\n0\r\n\r\n`

const matrix: Row[] = [
  { what: 'a dot segment in the target', status: 400, request: () => gw.get('/api/v1/users/../users', writer) },
  { what: 'an encoded dot segment', status: 400, request: () => gw.get('/api/v1/%2e%2e/users', writer) },
  { what: 'an absolute-form target', status: 400, request: () => gw.get('http://localhost/api/v1/users', writer) },
  { what: 'a target under no prefix with a bad path', status: 400, request: () => gw.get('/nope/a;b') },
  { what: 'no key', status: 401, request: () => gw.get('/api/v1/users') },
  { what: 'a malformed key', status: 401, request: () => gw.get('/api/v1/users', 'kg_nope') },
  { what: 'a permission missing', status: 403, request: () => gw.get('/api/v1/users', reader) },
  { what: 'no rule', status: 403, request: () => gw.get('/api/v1/no/rule', writer) },
  { what: 'no route prefix', status: 404, request: () => gw.get('/nope') },
  {
    what: 'a Content-Length over limits.body_bytes',
    status: 413,
    request: () => gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${writer}`, 'Content-Type': 'text/plain' }, 'a'.repeat(101))
  },
  {
    what: 'a chunked body over limits.body_bytes',
    status: 413,
    request: () => gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${writer}`, 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' }, chunked(150))
  },
  {
    what: 'a huge header',
    status: 431,
    request: () => rawRequest(gw.port, `GET /api/v1/users HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\nConnection: close\r\n\r\n`)
  }
]

t.test('errors the gateway produces', async (t) => {
  for (const row of matrix) {
    t.test(`${row.status} for ${row.what}`, async (t) => {
      const before = gw.upstream.requests.length
      const res = await row.request()
      t.equal(res.status, row.status, 'status')
      const entry = CATALOGUE[row.status]
      t.same(JSON.parse(res.body), { error: { code: entry?.code, message: entry?.message, status: row.status } }, 'the catalogue body, nothing else')
      t.equal(res.headers['content-type'], JSON_TYPE, 'Content-Type')
      t.match(res.headers['x-request-id'], /\S/, 'X-Request-Id')
      t.equal(gw.upstream.requests.length, before, 'the upstream never saw a complete request')
    })
  }
  t.end()
})

t.test('bodies at the limit pass', async (t) => {
  const res = await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${writer}`, 'Content-Type': 'text/plain' }, 'a'.repeat(100))
  t.equal(res.status, 200, 'exactly limits.body_bytes is allowed')
  t.equal(gw.upstream.last()?.body.length, 100, 'the whole body reached the upstream')
})

t.test('proxied responses carry the gateway\'s X-Request-Id', async (t) => {
  t.test('an upstream 200', async (t) => {
    const res = await gw.get('/api/v1/users', writer)
    t.equal(res.status, 200)
    const id = res.headers['x-request-id']
    t.match(id, /\S/, 'X-Request-Id present')
    t.equal(gw.upstream.last()?.headers['x-request-id'], id, 'the id the upstream was given')
  })

  t.test('an upstream that sends its own X-Request-Id', async (t) => {
    gw.upstream.setMode({ kind: 'status', status: 200, body: 'own', headers: { 'X-Request-Id': 'upstream-chosen-id' } })
    t.teardown(() => gw.upstream.setMode('echo'))
    const res = await gw.get('/api/v1/users', writer)
    t.equal(res.status, 200)
    t.equal(res.body, 'own', 'body passes through')
    const ids = res.rawHeaders.filter(([name]) => name.toLowerCase() === 'x-request-id').map(([, value]) => value)
    t.same(ids, [gw.upstream.last()?.headers['x-request-id']], 'one X-Request-Id, the gateway\'s')
    t.not(ids[0], 'upstream-chosen-id', 'the upstream\'s id does not win')
  })
  t.end()
})

interface Passthrough {
  what: string
  method: string
  status: number
  body: string
  headers: Record<string, string>
}

const upstreamAnswers: Passthrough[] = [
  { what: '503 with a text body', method: 'GET', status: 503, body: 'x', headers: { 'Content-Type': 'text/plain', 'Retry-After': '7' } },
  { what: '503 to a POST', method: 'POST', status: 503, body: 'x', headers: { 'Content-Type': 'text/plain' } },
  { what: '502 with a JSON body of its own', method: 'GET', status: 502, body: '{"upstream":"down"}', headers: { 'Content-Type': 'application/json' } },
  { what: '504 of its own', method: 'GET', status: 504, body: 'slow db', headers: { 'Content-Type': 'text/plain' } },
  { what: '500 with a stack trace of its own', method: 'GET', status: 500, body: 'Error: boom\n    at x.js:1', headers: { 'Content-Type': 'text/plain' } },
  { what: '404 of its own', method: 'GET', status: 404, body: 'no such user', headers: { 'Content-Type': 'text/plain' } },
  { what: '401 with its own challenge', method: 'GET', status: 401, body: 'nope', headers: { 'Content-Type': 'text/plain', 'WWW-Authenticate': 'Basic realm="inner"' } },
  { what: '429 of its own', method: 'GET', status: 429, body: 'slow down', headers: { 'Content-Type': 'text/plain', 'Retry-After': '1' } }
]

t.test('upstream responses pass through unchanged, once', async (t) => {
  for (const u of upstreamAnswers) {
    t.test(`upstream ${u.what}`, async (t) => {
      gw.upstream.setMode({ kind: 'status', status: u.status, body: u.body, headers: u.headers })
      t.teardown(() => gw.upstream.setMode('echo'))
      const before = gw.upstream.requests.length
      const res = await gw.send(u.method, '/api/v1/users', { Authorization: `Bearer ${writer}` }, u.method === 'POST' ? '{}' : undefined)
      t.equal(res.status, u.status, 'status')
      t.equal(res.body, u.body, 'body')
      for (const [name, value] of Object.entries(u.headers)) {
        t.equal(res.headers[name.toLowerCase()], value, `header ${name}`)
      }
      t.match(res.headers['x-request-id'], /\S/, 'X-Request-Id')
      // a retry would arrive right after the first answer; leave it time to show up
      await new Promise((resolve) => setTimeout(resolve, 300))
      t.equal(gw.upstream.requests.length, before + 1, 'the upstream saw exactly one request')
    })
  }
  t.end()
})
