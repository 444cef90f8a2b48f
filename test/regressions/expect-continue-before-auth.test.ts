/**
 * `Expect` was answered by node itself: anything but `100-continue` got a bare 417
 * (no error object, no request id, no log line), and `100-continue` got
 * `100 Continue` before the key was checked, inviting an unauthenticated client to
 * send its body. Now any other expectation gets `417 expectation_failed` like every
 * other refusal, and `100 Continue` is sent only once the request passed
 * authentication and authorization; a refused request gets its final answer first
 * and its body is never read.
 */
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'
import { rawRequest, req } from '../helpers/raw-http.js'
import { openConversation } from '../helpers/raw-socket.js'

const EXPECTATION_FAILED = { error: { code: 'expectation_failed', message: 'Expectation not supported', status: 417 } }

t.test('an expectation other than 100-continue: 417 expectation_failed, logged, never forwarded', async (t) => {
  const gw = await startGateway(t)
  const { key } = await gw.fixtures.personalKey('bob')
  for (const [name, value, withKey] of [
    ['something-else, with a valid key', 'something-else', true],
    ['something-else, without a key', 'something-else', false],
    ['100-continue among others', 'foo, 100-continue', true],
    ['an empty value', '', true]
  ] as const) {
    await t.test(name, async (t) => {
      const before = gw.upstream.requests.length
      const headers: Array<[string, string]> = [['Expect', value], ...(withKey ? [['Authorization', `Bearer ${key}`] as [string, string]] : [])]
      const res = await rawRequest(gw.port, req('POST', '/api/v1/users', headers, '{}'))
      t.equal(res.status, 417, 'status 417')
      t.same(res.json(), EXPECTATION_FAILED, 'the catalogue body')
      t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      const line = await gw.logOf(res)
      t.equal(line?.status, 417, 'one log line, found by the request id')
      t.equal(line?.reason, 'expectation_failed', 'with its reason')
      t.equal(gw.upstream.requests.length, before, 'never forwarded')
    })
  }
})

t.test('Expect: 100-continue: no 100 Continue before a refusal, and the body is not read', async (t) => {
  const gw = await startGateway(t)
  const alice = await gw.fixtures.personalKey('alice') // reader: may not POST /users
  for (const [name, auth, status] of [
    ['no key', undefined, 401],
    ['an unknown key', 'Bearer kg_unknownkeyunknownkeyunknownkey', 401],
    ['a key without the permission', `Bearer ${alice.key}`, 403]
  ] as const) {
    await t.test(name, async (t) => {
      const before = gw.upstream.requests.length
      const c = await openConversation(gw.port)
      t.teardown(() => { c.socket.destroy() })
      c.write(`POST /api/v1/users HTTP/1.1\r\nHost: localhost\r\n${auth === undefined ? '' : `Authorization: ${auth}\r\n`}` +
        'Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n')
      const text = await c.waitFor(/\r\n\r\n/)
      t.match(text, new RegExp(`^HTTP/1\\.1 ${status} `), `the first thing sent is the final ${status}`)
      t.notMatch(text, /HTTP\/1\.1 100/, 'no 100 Continue')
      await c.waitClosed()
      t.notMatch(c.received(), /HTTP\/1\.1 100/, 'no 100 Continue, ever')
      t.equal(gw.upstream.requests.length, before, 'never forwarded')
    })
  }
})

t.test('Expect: 100-continue on an allowed request: 100 Continue, then the body, then 200', async (t) => {
  const gw = await startGateway(t)
  const bob = await gw.fixtures.personalKey('bob') // writer
  const c = await openConversation(gw.port)
  t.teardown(() => { c.socket.destroy() })
  c.write(`POST /api/v1/users HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${bob.key}\r\n` +
    'Expect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: 12\r\nConnection: close\r\n\r\n')
  const interim = await c.waitFor(/\r\n\r\n/)
  t.match(interim, /^HTTP\/1\.1 100 Continue\r\n\r\n$/, 'the interim 100 comes first, alone')
  c.write('{"name":"x"}')
  await c.waitClosed()
  t.match(c.received(), /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /, 'then the upstream\'s 200')
  t.equal(gw.upstream.last()?.body.toString(), '{"name":"x"}', 'the upstream received the body')
  t.equal(gw.upstream.last()?.headers.expect, undefined, 'Expect is not forwarded')
})
