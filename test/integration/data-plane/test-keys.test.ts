/**
 * Test keys (docs/test-keys.md), over raw sockets against a real Redis and two real
 * upstreams, a live one (`core`) and a sandbox (`sandbox`):
 *
 * - a test key (`kgt_`) is created with `env: test`; on a route with a `test_upstream`
 *   its requests go there, with `X-Auth-Env: test`; a live key's go to the route's
 *   upstream with `X-Auth-Env: live`; a client's own `X-Auth-Env` is stripped;
 * - on a route without one it is refused 403 `test_key_not_allowed`;
 * - a table over routes and methods: a test key never reaches the live upstream, nor
 *   does the same key given the live prefix (its checksum recomputed: 401);
 * - the key view shows `env: test`.
 */
import t, { type Test } from 'tap'
import { assembleKey, checksum } from '../../../src/registry/key-format.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { rawValues, startUpstream } from '../../helpers/upstream.js'
import { openClient, wsUpgrade } from '../../helpers/ws-client.js'
import { startWsUpstream } from '../../helpers/ws-upstream.js'

async function world (t: Test): Promise<{ gw: TestGateway, sandbox: Awaited<ReturnType<typeof startUpstream>> }> {
  const sandbox = await startUpstream()
  t.teardown(() => sandbox.close())
  const gw = await startGateway(t, {
    configure (c) {
      const core = c.upstreams.core
      if (core === undefined) throw new Error('no core upstream')
      c.upstreams.sandbox = { ...core, url: sandbox.url }
      const [api] = c.routes
      if (api === undefined) throw new Error('no route')
      c.routes = [{ ...api, test_upstream: 'sandbox' }, { prefix: '/live', upstream: 'core' }]
      c.rules.push({ method: '*', path: '/live/*', permissions: [] })
    }
  })
  return { gw, sandbox }
}

t.test('a test key goes to the test upstream, and only there', async (t) => {
  const { gw, sandbox } = await world(t)
  const { result: testKey } = await gw.fixtures.admin.createKey({ type: 'bot', role: 'reader', org: 'acme', env: 'test' })
  const live = await gw.fixtures.botKey('reader', 'acme')
  t.match(testKey.key, /^kgt_[0-9A-Za-z]{16}_[0-9A-Za-z]{38}$/, 'the test prefix')
  t.equal(testKey.env, 'test')
  t.match(live.key, /^kg_/, 'a live key keeps the live prefix')

  const viaTest = await gw.get('/api/v1/users', testKey.key, { 'X-Auth-Env': 'live' })
  t.equal(viaTest.status, 200)
  t.equal(sandbox.requests.length, 1, 'the test upstream got it')
  t.equal(gw.upstream.requests.length, 0, 'the live upstream got nothing')
  t.same(rawValues(sandbox.last(), 'x-auth-env'), ['test'], "X-Auth-Env: test, the client's own stripped")
  t.same(rawValues(sandbox.last(), 'x-auth-key-id'), [testKey.id])

  const viaLive = await gw.get('/api/v1/users', live.key)
  t.equal(viaLive.status, 200)
  t.equal(gw.upstream.requests.length, 1, 'a live key goes to the route\'s upstream')
  t.same(rawValues(gw.upstream.last(), 'x-auth-env'), ['live'])

  const refused = await gw.get('/live/x', testKey.key)
  t.equal(refused.status, 403, 'a route without test_upstream refuses a test key')
  t.match(await gw.logOf(refused), { reason: 'test_key_not_allowed', key_id: testKey.id })
  t.equal((await gw.get('/live/x', live.key)).status, 200, 'and lets a live key through')

  const view = (await gw.fixtures.admin.showKey(testKey.id))
  t.equal(view.env, 'test', 'the key view shows the environment')
  t.equal((await gw.fixtures.admin.showKey(live.id)).env, undefined, 'a live key\'s view has none (live)')
})

t.test('a table over routes and methods: a test key never reaches a live upstream', async (t) => {
  const { gw, sandbox } = await world(t)
  const { result: testKey } = await gw.fixtures.admin.createKey({ type: 'bot', role: 'admin', org: 'acme', env: 'test' })
  // the same id and secret under the live prefix, its checksum recomputed: a forgery anyone could make
  const secret = testKey.key.slice(4 + 17, 4 + 17 + 32)
  const relabelled = assembleKey('kg_', testKey.id, secret)
  t.equal(relabelled.slice(-6), checksum(relabelled.slice(0, -6)), 'the relabelled key passes the checksum')

  const targets = ['/live', '/live/', '/live/x', '/live/%2e%2e/api/v1/users', '/api/v1/users', '/api/v1/orgs/acme/x', '/api/v1/open/a']
  const methods = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
  for (const target of targets) {
    for (const method of methods) {
      for (const [name, key] of [['test key', testKey.key], ['relabelled', relabelled]] as const) {
        const before = gw.upstream.requests.length
        const res = await gw.send(method, target, { Authorization: `Bearer ${key}` }, method === 'POST' || method === 'PUT' ? '{}' : undefined)
        t.equal(gw.upstream.requests.length, before, `${name} ${method} ${target}: not at the live upstream (${res.status})`)
        if (name === 'relabelled') t.ok(res.status === 401 || res.status === 400 || res.status === 404, `${method} ${target}: relabelled refused`)
      }
    }
  }
  t.ok(sandbox.requests.length > 0, 'the test upstream got the allowed ones')
  t.ok(sandbox.requests.every((r) => rawValues(r, 'x-auth-env')[0] === 'test'), 'each with X-Auth-Env: test')
})

t.test('a WebSocket upgrade with a test key goes to the test upstream, or is refused', async (t) => {
  const liveWs = await startWsUpstream()
  const testWs = await startWsUpstream()
  t.teardown(() => liveWs.close())
  t.teardown(() => testWs.close())
  const gw = await startGateway(t, {
    yaml: `
routes:
  - { prefix: /api/v1, upstream: core }
rules:
  - { method: GET, path: /api/v1/*, permissions: [] }
`,
    configure (c) {
      const core = c.upstreams.core
      if (core === undefined) throw new Error('no core upstream')
      c.upstreams.core = { ...core, url: liveWs.url }
      c.upstreams.sandbox = { ...core, url: testWs.url }
      c.routes = [{ prefix: '/api/v1', upstream: 'core', test_upstream: 'sandbox' }, { prefix: '/live', upstream: 'core' }]
      c.rules.push({ method: 'GET', path: '/live/*', permissions: [] })
    }
  })
  const { result: testKey } = await gw.fixtures.admin.createKey({ type: 'bot', role: 'reader', org: 'acme', env: 'test' })
  const client = await openClient(gw.port, '/api/v1/stream', { headers: { Authorization: `Bearer ${testKey.key}` } })
  t.teardown(() => client.socket.terminate())
  t.equal(testWs.upgrades.length, 1, 'the test upstream got the upgrade')
  t.equal(liveWs.upgrades.length, 0, 'the live upstream got nothing')
  const refused = await wsUpgrade(gw.port, '/live/stream', { Authorization: `Bearer ${testKey.key}` })
  t.equal(refused.status, 403, 'a route without test_upstream refuses the upgrade')
  t.equal(liveWs.upgrades.length, 0, 'still nothing at the live upstream')
})
