/**
 * A WebSocket upgrade to an upstream with targets goes to a target chosen as a request
 * is (round robin here), and to none that is out: with every target out, the upgrade
 * gets 502 (docs/routing.md#upstreams).
 */
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'
import { openClient, wsUpgrade } from '../../helpers/ws-client.js'
import { startWsUpstream } from '../../helpers/ws-upstream.js'

t.test('upgrades are spread over the targets; none up: 502', async (t) => {
  const ups = [await startWsUpstream(), await startWsUpstream()]
  for (const up of ups) t.teardown(() => up.close())
  const gw = await startGateway(t, {
    yaml: `upstreams:
  core:
    targets: [${ups.map((u) => `"${u.url}"`).join(', ')}]
    passive: { failures: 1, ejection: 1m }
    connect_timeout_ms: 1000
rules:
  - { method: GET, path: /api/v1/open/*, permissions: [] }
`
  })
  const key = (await gw.fixtures.personalKey('alice')).key
  for (let i = 0; i < 4; i++) {
    const client = await openClient(gw.port, `/api/v1/open/ws-${i}`, { key })
    client.socket.send('ping')
    t.equal((await client.next()).data.toString(), 'ping', 'relayed')
    client.socket.close()
  }
  const seen = ups.map((u) => u.upgrades.map((r) => r.url))
  t.same(seen, [['/api/v1/open/ws-0', '/api/v1/open/ws-2'], ['/api/v1/open/ws-1', '/api/v1/open/ws-3']], 'in turn')

  // both targets out (passive ejection by refused requests), for a minute
  for (const up of ups) await up.close()
  for (let i = 0; i < 2; i++) t.equal((await gw.get(`/api/v1/open/x-${i}`, key)).status, 502)
  const res = await wsUpgrade(gw.port, '/api/v1/open/ws', { Authorization: `Bearer ${key}` })
  t.equal(res.status, 502)
  t.same(JSON.parse(res.body), { error: { code: 'bad_gateway', message: 'Upstream service unavailable', status: 502 } })
})
