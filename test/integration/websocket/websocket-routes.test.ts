/**
 * WebSocket upgrades and routes (docs/routing.md): an upgrade on a rewriting route
 * reaches the upstream at the rewritten path; a key in the route's key header opens it
 * and is never forwarded; a public rule opens no WebSocket without a key; routes with
 * hosts are chosen by the upgrade's Host.
 */
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'
import { rawValues } from '../../helpers/upstream.js'
import { openClient, wsUpgrade } from '../../helpers/ws-client.js'
import { startWsUpstream } from '../../helpers/ws-upstream.js'

t.test('upgrades through rewriting, key-header, host and public routes', async (t) => {
  const up = await startWsUpstream()
  t.teardown(() => up.close())
  const gw = await startGateway(t, {
    yaml: `
routes:
  - { prefix: /api/v1, upstream: core }
  - { prefix: /live, upstream: core, rewrite_prefix: /v2/stream, key_header: apikey }
  - { prefix: /feed, upstream: core, hosts: [feed.example.com], strip_prefix: true }
rules:
  - { method: GET, path: /api/v1/open/*, public: true }
  - { method: GET, path: /api/v1/*, permissions: [] }
  - { method: GET, path: /live/*, permissions: [] }
  - { method: GET, path: /feed/*, permissions: [] }
`,
    configure: (c) => { (c.upstreams.core as { url: string }).url = up.url }
  })
  const { key, id } = await gw.fixtures.botKey('admin', 'acme')

  const client = await openClient(gw.port, '/live/prices?x=1', { headers: { apikey: key } })
  t.teardown(() => client.socket.terminate())
  const seen = up.upgrades.at(-1)
  t.equal(seen?.url, '/v2/stream/prices?x=1', 'the rewritten path, the query as sent')
  const values = (name: string): string[] => rawValues({ method: 'GET', url: '', headers: {}, body: Buffer.alloc(0), rawHeaders: seen?.rawHeaders ?? [] }, name)
  t.same(values('apikey'), [], 'the key header is not forwarded')
  t.same(values('x-auth-key-id'), [id], 'the identity headers')
  client.socket.send('ping')
  t.equal((await client.next()).data.toString(), 'ping', 'messages pass')

  const both = await wsUpgrade(gw.port, '/live/prices', { apikey: key, Authorization: `Bearer ${key}` })
  t.equal(both.status, 401, 'both credentials: 401')

  const anonymous = await wsUpgrade(gw.port, '/api/v1/open/x')
  t.equal(anonymous.status, 401, 'a public rule opens no WebSocket without a key')
  t.match(anonymous.headers['www-authenticate'] ?? '', /^Bearer realm="keygate"/)

  const hosted = await wsUpgrade(gw.port, '/feed/a', { Host: 'feed.example.com', Authorization: `Bearer ${key}` })
  t.equal(hosted.status, 101, 'the host picks the route')
  t.equal(up.upgrades.at(-1)?.url, '/a', 'stripped')
  const elsewhere = await wsUpgrade(gw.port, '/feed/a', { Host: 'other.test', Authorization: `Bearer ${key}` })
  t.equal(elsewhere.status, 404, 'another host: no route')
})
