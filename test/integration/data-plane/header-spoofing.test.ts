/**
 * The identity headers sent upstream and the headers a client may not steer (docs/security.md).
 *
 * - Every inbound header whose name, compared case-insensitively with `_` read
 *   as `-`, starts with the identity prefix is removed; the upstream sees exactly
 *   one value of each identity header: the gateway's.
 * - A client cannot make the gateway drop or alter these headers (for example
 *   with `Connection: X-Auth-User-Id`).
 * - `Proxy-Authorization` and the method-override headers are removed.
 * - `X-Forwarded-*` and `Forwarded` from the client are replaced, not appended
 *   to, unless the peer is a trusted proxy.
 * - Duplicate `Host` or ambiguous framing: 400, never forwarded.
 * - No header a client can send makes the gateway answer 500.
 *
 * Every request goes over a raw socket: header names and values reach the
 * gateway exactly as written here, duplicates and odd spellings included. The tests on
 * the default configuration share one gateway, each with its own keys, and count the
 * upstream's requests from their own start; a test that needs other configuration
 * starts its own.
 */
import t from 'tap'
import type { Test } from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { rawRequest, req, type HeaderList, type RawResponse } from '../../helpers/raw-http.js'
import type { RecordedRequest } from '../../helpers/upstream.js'

/** the gateway of the tests on the default configuration */
let gw: TestGateway
t.before(async () => { gw = await startGateway(t) })

const BAD_REQUEST_BODY = { error: { code: 'bad_request', message: 'Malformed request', status: 400 } }

/** Header name as the gateway compares it: case-insensitive, `_` read as `-`. */
function canonical (name: string): string {
  return name.toLowerCase().replace(/_/g, '-')
}

/** Every [canonical name, value] the upstream received whose name matches `test`, in order. */
function received (rec: RecordedRequest | undefined, test: (name: string) => boolean): Array<[string, string]> {
  const out: Array<[string, string]> = []
  const raw = rec?.rawHeaders ?? []
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = canonical(raw[i] as string)
    if (test(name)) out.push([name, raw[i + 1] as string])
  }
  return out
}

/** The only header of that (canonical) name the upstream received, or a description of the problem. */
function single (rec: RecordedRequest | undefined, name: string): string | undefined {
  const all = received(rec, (n) => n === name)
  return all.length === 1 ? all[0]?.[1] : undefined
}

function sorted (pairs: Array<[string, string]>): Array<[string, string]> {
  return [...pairs].sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)
}

interface Caller {
  key: string
  id: string
  expected: Array<[string, string]>
}

async function callers (gw: TestGateway): Promise<{ personal: Caller, bot: Caller }> {
  const alice = await gw.fixtures.personalKey('alice')
  const bot = await gw.fixtures.botKey('reader', 'globex')
  return {
    personal: {
      ...alice,
      expected: sorted([
        ['x-auth-key-id', alice.id],
        ['x-auth-key-type', 'personal'],
        ['x-auth-user-id', 'alice'],
        ['x-auth-org-id', 'acme'],
        ['x-auth-role', 'reader'],
        ['x-auth-env', 'live']
      ])
    },
    bot: {
      ...bot,
      // no user id at all for a BOT key, whatever the client sends
      expected: sorted([
        ['x-auth-key-id', bot.id],
        ['x-auth-key-type', 'bot'],
        ['x-auth-org-id', 'globex'],
        ['x-auth-role', 'reader'],
        ['x-auth-env', 'live']
      ])
    }
  }
}

/** The upstream saw exactly the gateway's identity headers, once each, and the gateway's request id. */
function assertGatewayIdentity (t: Test, gw: TestGateway, res: RawResponse, caller: Caller): void {
  t.equal(res.status, 200, 'forwarded')
  const rec = gw.upstream.last()
  t.same(sorted(received(rec, (n) => n.startsWith('x-auth-'))), caller.expected,
    'the upstream received exactly one value of each identity header, the gateway\'s, and no other X-Auth-* header')
  const ids = received(rec, (n) => n === 'x-request-id')
  t.same(ids, [['x-request-id', res.headers['x-request-id'] ?? '(none)']],
    'exactly one X-Request-Id upstream, the id returned to the client')
}

function assertBadRequest (t: Test, res: RawResponse): void {
  t.equal(res.status, 400, 'status 400')
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8', 'JSON error content type')
  t.same(JSON.parse(res.body), BAD_REQUEST_BODY, 'the catalogue body for 400')
}

t.test('client-sent identity headers, in every spelling, never reach the upstream', async (t) => {
  const who = await callers(gw)

  const spoofs: Array<[string, Array<[string, string]>]> = [
    ['canonical spelling', [['X-Auth-User-Id', 'evil']]],
    ['lower case', [['x-auth-user-id', 'evil']]],
    ['upper case', [['X-AUTH-ROLE', 'admin']]],
    ['underscores', [['X_Auth_Role', 'admin']]],
    ['underscores, lower case', [['x_auth_org_id', 'evil']]],
    ['mixed dashes and underscores', [['X-Auth_User-Id', 'evil'], ['X_AUTH-ROLE', 'admin']]],
    ['a name the gateway never sets', [['X-Auth-Anything-Else', 'x']]],
    ['the bare prefix', [['X-Auth-', 'x']]],
    ['key id and key type', [['X-Auth-Key-Id', 'forged'], ['X-Auth-Key-Type', 'bot']]],
    ['duplicated, same spelling', [['X-Auth-User-Id', 'evil'], ['X-Auth-User-Id', 'evil2']]],
    ['duplicated, different spellings', [['X-Auth-Role', 'admin'], ['x-auth-role', 'admin'], ['X_AUTH_ROLE', 'admin']]],
    ['duplicated org, every spelling', [['X-Auth-Org-Id', 'evil'], ['x-auth-org-id', 'evil'], ['X_Auth_Org_Id', 'evil']]],
    ['an empty value', [['X-Auth-User-Id', '']]],
    ['a value with a comma (list injection)', [['X-Auth-Role', 'reader, admin']]],
    ['request id', [['X-Request-Id', 'evil']]],
    ['request id, duplicated', [['X-Request-Id', 'evil'], ['x-request-id', 'evil2']]],
    ['request id, underscores', [['X_Request_Id', 'evil']]],
    ['everything at once', [
      ['X-Auth-Key-Id', 'forged'], ['X-Auth-Key-Type', 'personal'], ['X-Auth-User-Id', 'root'],
      ['X-Auth-Org-Id', 'evil'], ['X-Auth-Role', 'admin'], ['x_auth_role', 'admin'], ['X-Request-Id', 'evil']
    ]]
  ]

  for (const [kind, caller] of [['personal key', who.personal], ['BOT key', who.bot]] as const) {
    for (const [name, headers] of spoofs) {
      await t.test(`${kind}: ${name}`, async (t) => {
        const res = await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${caller.key}`], ...headers])
        assertGatewayIdentity(t, gw, res, caller)
      })
    }
  }
})

t.test('Connection cannot make the gateway drop its own headers', async (t) => {
  const { personal } = await callers(gw)

  const lists = [
    'X-Auth-User-Id, X-Auth-Role, X-Request-Id',
    'close, X-Auth-Key-Id, X-Auth-Key-Type, X-Auth-Org-Id',
    'keep-alive, x-auth-user-id, x-auth-role, x-request-id, X-Forwarded-For, X-Forwarded-Proto, X-Forwarded-Host',
    'X_Auth_User_Id, X_Auth_Role'
  ]
  for (const list of lists) {
    await t.test(`Connection: ${list}`, async (t) => {
      const res = await gw.send('GET', '/api/v1/users', [
        ['Authorization', `Bearer ${personal.key}`],
        ['Host', 'gateway.example'],
        ['Connection', list]
      ])
      assertGatewayIdentity(t, gw, res, personal)
      const rec = gw.upstream.last()
      t.equal(single(rec, 'x-forwarded-for'), '127.0.0.1', 'X-Forwarded-For is still set')
      t.equal(single(rec, 'x-forwarded-proto'), 'http', 'X-Forwarded-Proto is still set')
      t.equal(single(rec, 'x-forwarded-host'), 'gateway.example', 'X-Forwarded-Host is still set')
    })
  }

  await t.test('the listed headers, also sent with forged values, plus a second Connection header', async (t) => {
    const res = await gw.send('GET', '/api/v1/users', [
      ['Authorization', `Bearer ${personal.key}`],
      ['Connection', 'X-Auth-User-Id'],
      ['X-Auth-User-Id', 'evil'],
      ['Connection', 'X-Auth-Role, close'],
      ['X-Auth-Role', 'admin']
    ])
    assertGatewayIdentity(t, gw, res, personal)
  })
})

t.test('Proxy-Authorization and method-override headers are removed; the real method is forwarded', async (t) => {
  const bob = await gw.fixtures.personalKey('bob') // writer: users:*

  const removed = ['proxy-authorization', 'x-http-method-override', 'x-http-method', 'x-method-override']
  const cases: Array<[string, string, Array<[string, string]>]> = [
    ['Proxy-Authorization', 'GET', [['Proxy-Authorization', 'Basic dXNlcjpwYXNz']]],
    ['Proxy-Authorization, duplicated and lower case', 'GET', [['Proxy-Authorization', 'Basic a'], ['proxy-authorization', 'Bearer b']]],
    ['X-HTTP-Method-Override on GET', 'GET', [['X-HTTP-Method-Override', 'DELETE']]],
    ['X-HTTP-Method on GET', 'GET', [['X-HTTP-Method', 'DELETE']]],
    ['X-Method-Override on GET', 'GET', [['X-Method-Override', 'DELETE']]],
    ['all three on POST', 'POST', [['X-HTTP-Method-Override', 'DELETE'], ['X-HTTP-Method', 'PUT'], ['X-Method-Override', 'PATCH']]],
    ['other spellings', 'POST', [['x-http-method-override', 'DELETE'], ['X-HTTP-METHOD', 'PUT'], ['X_Method_Override', 'PATCH'], ['X_HTTP_Method_Override', 'DELETE']]]
  ]
  for (const [name, method, headers] of cases) {
    await t.test(name, async (t) => {
      const before = gw.upstream.requests.length
      const res = await gw.send(method, '/api/v1/users', [['Authorization', `Bearer ${bob.key}`], ...headers], method === 'POST' ? '{}' : undefined)
      t.equal(res.status, 200, 'forwarded')
      t.equal(gw.upstream.requests.length, before + 1, 'one upstream request')
      const rec = gw.upstream.last()
      t.equal(rec?.method, method, 'the upstream received the real method')
      t.same(received(rec, (n) => removed.includes(n)), [], 'none of these headers reached the upstream')
    })
  }
})

t.test('X-Forwarded-* and Forwarded from an untrusted peer are replaced', async (t) => {
  for (const [label, yaml] of [
    ['no trusted proxies', ''],
    ['trusted proxies that do not include the peer', 'trusted_proxies: ["10.0.0.0/8", "::1/128"]\n']
  ] as const) {
    await t.test(label, async (t) => {
      const gw = await startGateway(t, { yaml })
      const { personal } = await callers(gw)
      const auth: [string, string] = ['Authorization', `Bearer ${personal.key}`]

      const cases: Array<[string, Array<[string, string]>]> = [
        ['one of each', [
          ['X-Forwarded-For', '1.2.3.4'], ['X-Forwarded-Proto', 'https'], ['X-Forwarded-Host', 'evil'], ['Forwarded', 'for=1.2.3.4']
        ]],
        ['duplicated', [
          ['X-Forwarded-For', '1.2.3.4'], ['X-Forwarded-For', '5.6.7.8'], ['X-Forwarded-Proto', 'https'], ['x-forwarded-proto', 'https'],
          ['X-Forwarded-Host', 'evil'], ['x-forwarded-host', 'evil2'], ['Forwarded', 'for=1.2.3.4'], ['forwarded', 'proto=https']
        ]],
        ['odd spellings', [
          ['x-FORWARDED-for', '1.2.3.4'], ['X_Forwarded_For', '1.2.3.4'], ['X_Forwarded_Proto', 'https'], ['X_Forwarded_Host', 'evil'], ['FORWARDED', 'for=1.2.3.4']
        ]],
        ['none sent', []]
      ]
      for (const [name, headers] of cases) {
        await t.test(name, async (t) => {
          const res = await gw.send('GET', '/api/v1/users', [auth, ['Host', 'gateway.example'], ...headers])
          t.equal(res.status, 200, 'forwarded')
          const rec = gw.upstream.last()
          t.same(received(rec, (n) => n === 'x-forwarded-for'), [['x-forwarded-for', '127.0.0.1']], 'X-Forwarded-For is just the peer')
          t.same(received(rec, (n) => n === 'x-forwarded-proto'), [['x-forwarded-proto', 'http']], 'X-Forwarded-Proto is the real scheme')
          t.same(received(rec, (n) => n === 'x-forwarded-host'), [['x-forwarded-host', 'gateway.example']], 'X-Forwarded-Host is the Host header')
          t.same(received(rec, (n) => n === 'forwarded'), [], 'Forwarded is removed')
        })
      }

      await t.test('other X-Forwarded-* values from the client do not reach the upstream', async (t) => {
        const res = await gw.send('GET', '/api/v1/users', [auth, ['X-Forwarded-Port', '8443'], ['X-Forwarded-Prefix', '/evil']])
        t.equal(res.status, 200, 'forwarded')
        const rec = gw.upstream.last()
        t.not(single(rec, 'x-forwarded-port'), '8443', 'the client\'s X-Forwarded-Port is not passed on')
        t.not(single(rec, 'x-forwarded-prefix'), '/evil', 'the client\'s X-Forwarded-Prefix is not passed on')
        t.notOk(received(rec, (n) => n.startsWith('x-forwarded-')).some(([, v]) => v === '8443' || v === '/evil'),
          'no X-Forwarded-* header upstream carries a client value')
      })
    })
  }
})

t.test('X-Forwarded-* from a trusted proxy are kept, and the peer is appended to X-Forwarded-For', async (t) => {
  const gw = await startGateway(t, { yaml: 'trusted_proxies: ["127.0.0.1/32"]\n' })
  const { personal } = await callers(gw)
  const auth: [string, string] = ['Authorization', `Bearer ${personal.key}`]

  await t.test('forwarding headers sent by the proxy', async (t) => {
    const res = await gw.send('GET', '/api/v1/users', [
      auth, ['Host', 'gateway.example'],
      ['X-Forwarded-For', '1.2.3.4'], ['X-Forwarded-Proto', 'https'], ['X-Forwarded-Host', 'evil'], ['Forwarded', 'for=1.2.3.4']
    ])
    t.equal(res.status, 200, 'forwarded')
    const rec = gw.upstream.last()
    t.same(received(rec, (n) => n === 'x-forwarded-for'), [['x-forwarded-for', '1.2.3.4, 127.0.0.1']], 'the peer is appended')
    t.same(received(rec, (n) => n === 'x-forwarded-proto'), [['x-forwarded-proto', 'https']], 'the proxy\'s scheme is kept')
    t.same(received(rec, (n) => n === 'x-forwarded-host'), [['x-forwarded-host', 'evil']], 'the proxy\'s host is kept')
    t.match(single(rec, 'forwarded') ?? '', /^for=1\.2\.3\.4/, 'Forwarded from a trusted proxy is not replaced')
  })

  await t.test('a trusted proxy that sends none', async (t) => {
    const res = await gw.send('GET', '/api/v1/users', [auth, ['Host', 'gateway.example']])
    t.equal(res.status, 200, 'forwarded')
    const rec = gw.upstream.last()
    t.same(received(rec, (n) => n === 'x-forwarded-for'), [['x-forwarded-for', '127.0.0.1']], 'X-Forwarded-For is the peer')
    t.same(received(rec, (n) => n === 'x-forwarded-proto'), [['x-forwarded-proto', 'http']], 'X-Forwarded-Proto is set')
    t.same(received(rec, (n) => n === 'x-forwarded-host'), [['x-forwarded-host', 'gateway.example']], 'X-Forwarded-Host is set')
  })

  await t.test('identity headers are stripped from a trusted proxy too', async (t) => {
    const res = await gw.send('GET', '/api/v1/users', [auth, ['X-Auth-Role', 'admin'], ['X_Auth_User_Id', 'root']])
    assertGatewayIdentity(t, gw, res, personal)
  })
})

t.test('duplicate Host and ambiguous framing: 400, never forwarded', async (t) => {
  const bob = await gw.fixtures.personalKey('bob')
  const auth: [string, string] = ['Authorization', `Bearer ${bob.key}`]
  // What a smuggler hides behind the first request's body.
  const smuggled = 'GET /api/v1/users HTTP/1.1\r\nHost: localhost\r\n\r\n'

  const cases: Array<[string, string, Array<[string, string]>, string?]> = [
    ['two Host headers, different values', 'GET', [['Host', 'a.example'], ['Host', 'b.example'], auth]],
    ['two Host headers, same value', 'GET', [['Host', 'a.example'], ['Host', 'a.example'], auth]],
    ['two Host headers, different case', 'GET', [['Host', 'a.example'], ['host', 'b.example'], auth]],
    ['Content-Length and Transfer-Encoding', 'POST', [auth, ['Content-Length', '5'], ['Transfer-Encoding', 'chunked']], '0\r\n\r\n' + smuggled],
    ['Transfer-Encoding and Content-Length', 'POST', [auth, ['Transfer-Encoding', 'chunked'], ['Content-Length', '40']], '0\r\n\r\n' + smuggled],
    ['two different Content-Lengths', 'POST', [auth, ['Content-Length', '5'], ['Content-Length', '6']], 'hello!'],
    ['a Content-Length list', 'POST', [auth, ['Content-Length', '5, 6']], 'hello!'],
    ['chunked not the final transfer coding', 'POST', [auth, ['Transfer-Encoding', 'chunked, gzip']], '5\r\nhello\r\n0\r\n\r\n'],
    ['whitespace before the colon of Transfer-Encoding', 'POST', [auth, ['Transfer-Encoding ', 'chunked']], '5\r\nhello\r\n0\r\n\r\n' + smuggled]
  ]
  for (const [name, method, headers, body] of cases) {
    await t.test(name, async (t) => {
      const before = gw.upstream.requests.length
      const res = await rawRequest(gw.port, req(method, '/api/v1/users', headers, body))
      assertBadRequest(t, res)
      // give a smuggled second request time to arrive, if it was going to
      await new Promise((resolve) => setTimeout(resolve, 50))
      t.equal(gw.upstream.requests.length, before, 'nothing was forwarded')
    })
  }
})

t.test('no header a client can send makes the gateway answer 500', async (t) => {
  const bob = await gw.fixtures.personalKey('bob')
  const bearer = `Bearer ${bob.key}`

  const many = (n: number, name: (i: number) => string): Array<[string, string]> =>
    Array.from({ length: n }, (_v, i): [string, string] => [name(i), 'v'])

  // [name, method, extra headers, body]; every request also gets the valid key unless it sends its own Authorization
  const odd: Array<[string, string, HeaderList, string?]> = [
    ['a long value under the limit', 'GET', [['X-Long', 'a'.repeat(12_000)]]],
    ['a long name under the limit', 'GET', [[`X-${'n'.repeat(4000)}`, 'v']]],
    ['a long identity header', 'GET', [['X-Auth-Key-Id', 'k'.repeat(8000)]]],
    ['a long cookie', 'GET', [['Cookie', 'a=' + 'b'.repeat(8000)]]],
    ['200 distinct headers', 'GET', many(200, (i) => `X-Many-${i}`)],
    ['100 copies of one header', 'GET', many(100, () => 'X-Dup')],
    ['100 copies of an identity header', 'GET', many(100, () => 'X-Auth-Role')],
    ['an empty value', 'GET', [['X-Empty', '']]],
    ['an empty Host', 'GET', [['Host', '']]],
    ['a Host with a bad port', 'GET', [['Host', 'evil.example:99999']]],
    ['a Host that is not a host', 'GET', [['Host', '[::1']]],
    ['Authorization with 1000 spaces', 'GET', [['Authorization', 'Bearer' + ' '.repeat(1000) + bob.key]]],
    ['Authorization that is 1000 spaces', 'GET', [['Authorization', ' '.repeat(1000)]]],
    ['an empty Authorization', 'GET', [['Authorization', '']]],
    ['a huge Bearer token', 'GET', [['Authorization', 'Bearer ' + 'A'.repeat(8000)]]],
    ['two Authorization headers', 'GET', [['Authorization', bearer], ['Authorization', bearer]]],
    ['Content-Type: garbage', 'POST', [['Content-Type', 'garbage']], '{"a":1}'],
    ['Content-Type: application/json with a broken body', 'POST', [['Content-Type', 'application/json']], '{{{'],
    ['Content-Type: multipart without a boundary', 'POST', [['Content-Type', 'multipart/form-data']], '--x--'],
    ['Content-Type: a form with garbage', 'POST', [['Content-Type', 'application/x-www-form-urlencoded']], '%%%&&=='],
    ['Content-Type with odd parameters', 'POST', [['Content-Type', 'application/json; charset=utf-999; ;;=']], '{}'],
    ['Content-Encoding: gzip on a body that is not', 'POST', [['Content-Encoding', 'gzip']], 'not gzip'],
    ['Content-Length: 0 on GET', 'GET', [['Content-Length', '0']]],
    ['a body on GET', 'GET', [['Content-Length', '5']], 'hello'],
    ['Expect: 100-continue', 'POST', [['Expect', '100-continue']], '{"a":1}'],
    ['Expect: something else', 'POST', [['Expect', 'teapot']], '{"a":1}'],
    ['Upgrade: websocket', 'GET', [['Upgrade', 'websocket'], ['Connection', 'Upgrade'], ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='], ['Sec-WebSocket-Version', '13']]],
    ['Upgrade: websocket without Connection', 'GET', [['Upgrade', 'websocket']]],
    ['Upgrade: h2c', 'GET', [['Upgrade', 'h2c'], ['HTTP2-Settings', 'AAMAAABkAAQAAP__'], ['Connection', 'Upgrade, HTTP2-Settings']]],
    ['TE: trailers', 'GET', [['TE', 'trailers']]],
    ['TE: gzip', 'GET', [['TE', 'gzip']]],
    ['Trailer naming an identity header', 'POST', [['Trailer', 'X-Auth-Role'], ['Transfer-Encoding', 'chunked']], '2\r\n{}\r\n0\r\nX-Auth-Role: admin\r\n\r\n'],
    ['Transfer-Encoding: gzip, chunked', 'POST', [['Transfer-Encoding', 'gzip, chunked']], '5\r\nhello\r\n0\r\n\r\n'],
    ['Keep-Alive: timeout=0', 'GET', [['Connection', 'keep-alive'], ['Keep-Alive', 'timeout=0, max=0']]],
    ['Proxy-Connection', 'GET', [['Proxy-Connection', 'keep-alive']]],
    ['Connection listing 200 names', 'GET', [['Connection', Array.from({ length: 200 }, (_v, i) => `X-H${i}`).join(', ')]]],
    ['Connection listing Authorization and Host', 'GET', [['Connection', 'Authorization, Host, Content-Length']]],
    ['Max-Forwards: 0', 'GET', [['Max-Forwards', '0']]],
    ['Range: garbage', 'GET', [['Range', 'bytes=garbage']]],
    ['If-Modified-Since: garbage', 'GET', [['If-Modified-Since', 'garbage']]],
    ['Accept-Encoding: garbage', 'GET', [['Accept-Encoding', 'garbage;q=nan, *;q=-1']]],
    ['X-Forwarded-For: garbage', 'GET', [['X-Forwarded-For', 'garbage, , ::::, 999.1.1.1']]],
    ['Forwarded: garbage', 'GET', [['Forwarded', 'for="[::1;by=;;']]],
    ['X-Request-Id: 8000 bytes', 'GET', [['X-Request-Id', 'r'.repeat(8000)]]],
    ['Via', 'GET', [['Via', '1.1 evil, 1.0 loop']]],
    ['a header name with every token character', 'GET', [["X-!#$%&'*+.^_`|~", 'v']]],
    ['a header name that is not a token', 'GET', [['X(Bad)', 'v']]],
    ['obsolete line folding', 'GET', [['X-Folded', 'a\r\n b']]]
  ]
  const withBytes: Array<[string, Buffer]> = [
    ['non-ASCII bytes in a value', Buffer.from([0xff, 0xfe, 0x80, 0xc3, 0xa9])],
    ['non-ASCII bytes in Authorization', Buffer.from([0x42, 0x65, 0x61, 0x72, 0x65, 0x72, 0x20, 0xc3, 0xa9, 0xff])],
    ['a NUL byte in a value', Buffer.from([0x61, 0x00, 0x62])],
    ['a lone CR in a value', Buffer.from([0x61, 0x0d, 0x62])],
    ['DEL in a value', Buffer.from([0x61, 0x7f, 0x62])]
  ]

  const answered = (t: Test, res: RawResponse): void => {
    t.ok(res.status >= 200 && res.status < 500, `answered, and not with a 5xx (got ${res.status}: ${res.body.slice(0, 200)})`)
  }

  for (const withKey of [true, false]) {
    for (const [name, method, headers, body] of odd) {
      await t.test(`${withKey ? 'with' : 'without'} a valid key: ${name}`, async (t) => {
        const list: Array<[string, string]> = Array.isArray(headers) ? headers : Object.entries(headers)
        const sendsAuth = list.some(([n]) => n.toLowerCase() === 'authorization')
        const all: Array<[string, string]> = withKey && !sendsAuth ? [['Authorization', bearer], ...list] : list
        answered(t, await rawRequest(gw.port, req(method, '/api/v1/users', all, body)))
      })
    }
    for (const [name, value] of withBytes) {
      await t.test(`${withKey ? 'with' : 'without'} a valid key: ${name}`, async (t) => {
        const isAuth = name.includes('Authorization')
        const head = 'GET /api/v1/users HTTP/1.1\r\nHost: localhost\r\n' +
          (withKey && !isAuth ? `Authorization: ${bearer}\r\n` : '') +
          (isAuth ? 'Authorization: ' : 'X-Bytes: ')
        const raw = Buffer.concat([Buffer.from(head, 'latin1'), value, Buffer.from('\r\nConnection: close\r\n\r\n', 'latin1')])
        answered(t, await rawRequest(gw.port, raw))
      })
    }
  }
})
