/**
 * Headers that upstream frameworks and proxies read to re-route a request or to
 * decide who the client is (X-Original-URL, X-Rewrite-URL, X-Real-IP, ...) passed
 * from any client to the upstream, which could then act on a path or an address
 * the gateway never checked. Now they are removed unless the peer is a trusted
 * proxy, in every spelling (case-insensitive, `_` read as `-`), and the names in
 * `identity.drop_headers` are removed from everyone. The gateway's identity headers
 * come first in the header block the upstream reads.
 */
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'

const STEERING = [
  'X-Original-URL', 'X-Rewrite-URL', 'X-Original-URI', 'X-Original-Method', 'X-Forwarded-Uri',
  'X-Forwarded-Method', 'X-Forwarded-Prefix', 'X-Forwarded-Scheme', 'X-Forwarded-Ssl', 'Front-End-Https',
  'X-Real-IP', 'True-Client-IP', 'X-Client-IP', 'X-Cluster-Client-IP', 'CF-Connecting-IP', 'Fastly-Client-IP'
]

const canonical = (name: string): string => name.toLowerCase().replace(/_/g, '-')
const spellings = (name: string): string[] => [name, name.toLowerCase(), name.toUpperCase(), name.replace(/-/g, '_')]
const namesReceived = (raw: string[] | undefined): string[] => (raw ?? []).filter((_v, i) => i % 2 === 0).map(canonical)

t.test('request-steering headers from an untrusted peer never reach the upstream', async (t) => {
  const gw = await startGateway(t)
  const { key } = await gw.fixtures.personalKey('alice')
  const listed = STEERING.map(canonical)
  for (const name of STEERING) {
    await t.test(name, async (t) => {
      const sent = spellings(name).map((n, i): [string, string] => [n, `/admin/${i}`])
      const res = await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${key}`], ...sent])
      t.equal(res.status, 200, 'forwarded')
      const received = namesReceived(gw.upstream.last()?.rawHeaders)
      t.notOk(received.includes(canonical(name)), `no spelling of ${name} reached the upstream`)
      t.same(received.filter((n) => listed.includes(n)), [], 'nor any other listed header')
    })
  }
})

t.test('identity.drop_headers are removed in every spelling', async (t) => {
  const gw = await startGateway(t, { yaml: 'identity: { drop_headers: [X-Debug-User, X_Internal_Token] }\n' })
  const { key } = await gw.fixtures.personalKey('alice')
  for (const name of ['X-Debug-User', 'X-Internal-Token']) {
    const sent = spellings(name).map((n): [string, string] => [n, 'root'])
    const res = await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${key}`], ['X-Kept', 'yes'], ...sent])
    t.equal(res.status, 200, 'forwarded')
    const received = namesReceived(gw.upstream.last()?.rawHeaders)
    t.notOk(received.includes(canonical(name)), `no spelling of ${name} reached the upstream`)
    t.ok(received.includes('x-kept'), 'other headers pass')
  }
})

t.test('from a trusted proxy the steering headers pass; identity.drop_headers never does', async (t) => {
  const gw = await startGateway(t, { yaml: 'trusted_proxies: ["127.0.0.1/32"]\nidentity: { drop_headers: [X-Debug-User] }\n' })
  const { key } = await gw.fixtures.personalKey('alice')
  const res = await gw.send('GET', '/api/v1/users', [
    ['Authorization', `Bearer ${key}`], ['X-Real-IP', '203.0.113.7'], ['X-Original-URL', '/api/v1/users'], ['X-Debug-User', 'root'], ['x_debug_user', 'root']
  ])
  t.equal(res.status, 200, 'forwarded')
  const rec = gw.upstream.last()
  t.equal(rec?.headers['x-real-ip'], '203.0.113.7', 'the proxy\'s X-Real-IP is kept')
  t.equal(rec?.headers['x-original-url'], '/api/v1/users', 'the proxy\'s X-Original-URL is kept')
  t.notOk(namesReceived(rec?.rawHeaders).includes('x-debug-user'), 'identity.drop_headers is dropped from a trusted proxy too')
})

t.test('the identity headers come first in the header block the upstream receives', async (t) => {
  const gw = await startGateway(t)
  const { key } = await gw.fixtures.personalKey('alice')
  const bot = await gw.fixtures.botKey('reader', 'globex')
  for (const [who, k, expected] of [
    ['personal key', key, ['x-auth-key-id', 'x-auth-key-type', 'x-auth-user-id', 'x-auth-org-id', 'x-auth-role']],
    ['BOT key', bot.key, ['x-auth-key-id', 'x-auth-key-type', 'x-auth-org-id', 'x-auth-role']]
  ] as const) {
    await t.test(who, async (t) => {
      // client headers first on the wire, one of them a name made of digits (an
      // integer-like property name would sort ahead of every other in a JS object)
      const res = await gw.send('GET', '/api/v1/users', [['Accept', '*/*'], ['X-Filler', 'a'], ['1', 'one'], ['Authorization', `Bearer ${k}`], ['User-Agent', 'test']])
      t.equal(res.status, 200, 'forwarded')
      const names = namesReceived(gw.upstream.last()?.rawHeaders)
      // undici writes its own Host and Connection ahead of the headers it is given
      const given = names.filter((n) => n !== 'host' && n !== 'connection')
      t.same(names.slice(0, names.length - given.length), ['host', 'connection'], 'only Host and Connection come before them')
      t.same(given.slice(0, expected.length), expected, `the first fields are the identity headers (got ${names.join(', ')})`)
    })
  }
})
