/**
 * Contract section 9, Path policy: the request target must be origin-form; dot
 * segments (in any percent-encoded spelling), empty segments, encoded `/` or `\`,
 * raw `\`, `;`, `%00`, control characters and invalid percent-encoding get
 * `400 bad_request` and never reach an upstream. Percent-encoded unreserved
 * characters are decoded once before matching, and the decoded form is what the
 * upstream receives; everything else is forwarded byte for byte.
 *
 * Every target is sent over a raw socket with a valid key that may call any path
 * under /api/v1 (a catch-all rule without permissions), so a 400 proves the
 * policy, never authentication or authorization.
 */
import t from 'tap'
import type { Test } from 'tap'
import { startGateway, type TestGateway } from '../helpers/gateway.js'
import { rawRequest, type RawResponse } from '../helpers/raw-http.js'

// The standard rules, plus a catch-all that any valid key may call.
const RULES = `
rules:
  - { method: GET,  path: /api/v1/users,        permissions: [users:read] }
  - { method: POST, path: /api/v1/users,        permissions: [users:write] }
  - { method: "*",  path: /api/v1/orgs/:org/*,  permissions: [orgs:read], org_param: org }
  - { method: "*",  path: /api/v1/*,            permissions: [] }
`

const BAD_REQUEST_BODY = { error: { code: 'bad_request', message: 'Malformed request', status: 400 } }

function assertBadRequest (t: Test, res: RawResponse): void {
  t.equal(res.status, 400, 'status 400')
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8', 'JSON error content type')
  t.same(JSON.parse(res.body), BAD_REQUEST_BODY, 'the catalogue body for 400')
  t.ok((res.headers['x-request-id'] ?? '') !== '', 'carries X-Request-Id')
}

/** A request line with an exact target, sent byte for byte; the key is admin (`*`). */
function rawGet (method: string, target: string | Buffer, key: string): Buffer {
  const head = Buffer.from(`${method} `, 'latin1')
  const tail = Buffer.from(` HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${key}\r\nConnection: close\r\n\r\n`, 'latin1')
  return Buffer.concat([head, typeof target === 'string' ? Buffer.from(target, 'utf8') : target, tail])
}

t.test('refused request targets: 400 bad_request, upstream never contacted', async (t) => {
  const gw = await startGateway(t, { yaml: RULES })
  const { key } = await gw.fixtures.botKey('admin', 'acme')

  // Sanity: the same key and rule set reach the upstream with a clean path.
  const ok = await gw.send('GET', '/api/v1/x', { Authorization: `Bearer ${key}` })
  t.equal(ok.status, 200, 'control: a clean path under the catch-all rule is forwarded')

  const refused: Array<[string, string, string | Buffer]> = [
    // dot segments, in every spelling
    ['dot-dot segment', 'GET', '/api/v1/../admin'],
    ['dot segment', 'GET', '/api/v1/./x'],
    ['encoded dot-dot (lower case)', 'GET', '/api/v1/%2e%2e/x'],
    ['encoded dot-dot (mixed case)', 'GET', '/api/v1/%2E%2e/x'],
    ['half-encoded dot-dot', 'GET', '/api/v1/.%2e/x'],
    ['half-encoded dot-dot, other half', 'GET', '/api/v1/%2e./x'],
    ['encoded single dot', 'GET', '/api/v1/%2e/x'],
    ['trailing dot-dot segment', 'GET', '/api/v1/x/..'],
    // not dot segments, but segments starting or ending with `..` are refused too, up front:
    // @fastify/reply-from will not forward them (docs/security.md)
    ['three dots', 'GET', '/api/v1/.../x'],
    ['a segment starting with two dots', 'GET', '/api/v1/..foo'],
    ['a segment ending with two dots', 'GET', '/api/v1/foo../x'],
    ['trailing dot segment', 'GET', '/api/v1/x/.'],
    ['double-encoded dot-dot', 'GET', '/api/v1/%252e%252e/x'],
    ['dot-dot climbing out of the prefix', 'GET', '/api/v1/../../etc/passwd'],
    // empty segments
    ['empty segment', 'GET', '/api/v1//x'],
    ['empty segment after the root', 'GET', '//api/v1/x'],
    // encoded separators and backslashes
    ['encoded slash (upper case)', 'GET', '/api/v1/a%2Fb'],
    ['encoded slash (lower case)', 'GET', '/api/v1/a%2fb'],
    ['encoded backslash (upper case)', 'GET', '/api/v1/a%5Cb'],
    ['encoded backslash (lower case)', 'GET', '/api/v1/a%5cb'],
    ['raw backslash', 'GET', '/api/v1/a\\b'],
    ['raw backslash dot-dot', 'GET', '/api/v1/..\\admin'],
    // path parameters
    ['semicolon', 'GET', '/api/v1/a;b'],
    ['jsessionid path parameter', 'GET', '/api/v1/users;jsessionid=1'],
    ['semicolon dot-dot (Tomcat style)', 'GET', '/api/v1/..;/admin'],
    // NUL and control characters, encoded
    ['encoded NUL', 'GET', '/api/v1/%00'],
    ['encoded NUL mid-segment', 'GET', '/api/v1/users%00.json'],
    ['encoded line feed', 'GET', '/api/v1/a%0Ab'],
    ['encoded carriage return', 'GET', '/api/v1/a%0db'],
    ['encoded tab', 'GET', '/api/v1/a%09b'],
    ['encoded DEL', 'GET', '/api/v1/a%7Fb'],
    // invalid percent-encoding
    ['non-hex escape', 'GET', '/api/v1/%zz'],
    ['truncated escape', 'GET', '/api/v1/%4'],
    ['lone percent', 'GET', '/api/v1/100%'],
    // not origin-form
    ['absolute-form', 'GET', 'http://evil.example/api/v1/users'],
    ['absolute-form to the gateway itself', 'GET', 'http://localhost/api/v1/users'],
    ['asterisk-form', 'OPTIONS', '*'],
    ['authority-form with GET', 'GET', 'localhost:80'],
    ['relative target', 'GET', 'api/v1/users'],
    // raw control characters (node's parser refuses some itself; either way: 400, not forwarded)
    ['raw NUL', 'GET', Buffer.from('/api/v1/a\x00b', 'latin1')],
    ['raw SOH', 'GET', Buffer.from('/api/v1/a\x01b', 'latin1')],
    ['raw tab', 'GET', Buffer.from('/api/v1/a\tb', 'latin1')],
    ['raw form feed', 'GET', Buffer.from('/api/v1/a\x0cb', 'latin1')],
    ['raw escape', 'GET', Buffer.from('/api/v1/a\x1bb', 'latin1')],
    ['raw DEL', 'GET', Buffer.from('/api/v1/a\x7fb', 'latin1')],
    ['raw C1 control (NEL, one byte)', 'GET', Buffer.from('/api/v1/a\x85b', 'latin1')],
    ['raw C1 control (NEL, UTF-8)', 'GET', Buffer.from('/api/v1/a\xc2\x85b', 'latin1')]
  ]

  for (const [name, method, target] of refused) {
    await t.test(`${name}: ${JSON.stringify(target.toString())}`, async (t) => {
      const before = gw.upstream.requests.length
      const res = await rawRequest(gw.port, rawGet(method, target, key))
      assertBadRequest(t, res)
      t.equal(gw.upstream.requests.length, before, 'the upstream was never contacted')
    })
  }
})

t.test('accepted request targets are forwarded byte for byte (unreserved escapes decoded once)', async (t) => {
  const gw = await startGateway(t, { yaml: RULES })
  const { key } = await gw.fixtures.botKey('admin', 'acme')

  const accepted: Array<[string, string, string]> = [
    ['a plain path', '/api/v1/users', '/api/v1/users'],
    ['an encoded unreserved letter in the route prefix', '/ap%69/v1/users', '/api/v1/users'],
    ['an encoded unreserved letter, upper-case hex', '/api/v1/%55sers', '/api/v1/Users'],
    ['encoded unreserved punctuation', '/api/v1/%7Ea%2Db%5Fc%2Ed', '/api/v1/~a-b_c.d'],
    ['encoded digits', '/api/v1/v%31', '/api/v1/v1'],
    ['UTF-8 escapes (upper-case hex) stay encoded', '/api/v1/caf%C3%A9', '/api/v1/caf%C3%A9'],
    ['UTF-8 escapes (lower-case hex) stay as sent', '/api/v1/caf%c3%a9', '/api/v1/caf%c3%a9'],
    ['an encoded space stays encoded', '/api/v1/a%20b', '/api/v1/a%20b'],
    ['a dot inside a segment is no dot segment', '/api/v1/file.json', '/api/v1/file.json'],
    ['sub-delimiters allowed in a segment', "/api/v1/a!$&'()*+,=:@b", "/api/v1/a!$&'()*+,=:@b"],
    ['the query string exactly as received', '/api/v1/users?a=1&a=2&b=%2F&c=hello+world&d', '/api/v1/users?a=1&a=2&b=%2F&c=hello+world&d'],
    ['a query is not path-normalised', '/api/v1/users?next=/../admin//x&e=%2e%2e', '/api/v1/users?next=/../admin//x&e=%2e%2e'],
    ['unreserved escapes in the query are not decoded', '/api/v1/users?q=%61%62', '/api/v1/users?q=%61%62'],
    ['decoding the path leaves the query alone', '/api/v1/%75sers?x=%75', '/api/v1/users?x=%75']
  ]

  for (const [name, target, forwarded] of accepted) {
    await t.test(`${name}: ${target}`, async (t) => {
      const before = gw.upstream.requests.length
      const res = await rawRequest(gw.port, rawGet('GET', target, key))
      t.equal(res.status, 200, 'forwarded')
      t.equal(res.headers['x-upstream'], 'yes', 'the answer came from the upstream')
      t.equal(gw.upstream.requests.length, before + 1, 'exactly one upstream request')
      t.equal(gw.upstream.last()?.url, forwarded, 'the upstream received exactly this target')
    })
  }
})

t.test('the rule is matched against the decoded path, the one forwarded', async (t) => {
  const gw = await startGateway(t, { yaml: RULES })
  // carol (orgreader) lacks users:read; alice (reader) has it.
  const carol = await gw.fixtures.personalKey('carol')
  const alice = await gw.fixtures.personalKey('alice')

  const cases: Array<[string, string]> = [
    ['an escape inside the rule segment', '/api/v1/us%65rs'],
    ['the whole segment encoded', '/api/v1/%75%73%65%72%73'],
    ['an escape inside the route prefix', '/%61pi/v1/users']
  ]
  for (const [name, target] of cases) {
    await t.test(name, async (t) => {
      await check(t, gw, target, carol.key, alice.key)
    })
  }
})

async function check (t: Test, gw: TestGateway, target: string, withoutPermission: string, withPermission: string): Promise<void> {
  // Read undecoded, the target would fall to the permission-free catch-all rule.
  const before = gw.upstream.requests.length
  const denied = await rawRequest(gw.port, rawGet('GET', target, withoutPermission))
  t.equal(denied.status, 403, 'a key without users:read is refused on the decoded path /api/v1/users')
  t.equal(gw.upstream.requests.length, before, 'the refused request never reached the upstream')

  const allowed = await rawRequest(gw.port, rawGet('GET', target, withPermission))
  t.equal(allowed.status, 200, 'a key with users:read is let through')
  t.equal(gw.upstream.last()?.url, '/api/v1/users', 'and the upstream receives the decoded path it was authorised on')
}

t.test('a refused target is refused before routing: also outside every route prefix and without a key', async (t) => {
  const gw = await startGateway(t, { yaml: RULES })
  const cases = ['/other/../api/v1/users', '/x/%2e%2e/api/v1/users', '/a%2Fb', '//api/v1/users']
  for (const target of cases) {
    await t.test(target, async (t) => {
      const before = gw.upstream.requests.length
      const res = await gw.send('GET', target)
      assertBadRequest(t, res)
      t.equal(gw.upstream.requests.length, before, 'the upstream was never contacted')
    })
  }
})
