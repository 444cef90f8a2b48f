/**
 * What an operator reads: the request log line names the client (`client_ip`: the TCP
 * peer, or the client a trusted proxy reports, never a client's own claim) and the
 * matched rule by its pattern, as the metrics label it; /metrics has
 * keygate_build_info and one status scheme on both request metrics.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { startGateway } from '../../helpers/gateway.js'
import { parsePromText, valueOf } from '../../helpers/prom-text.js'

const { version } = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }

t.test('data plane: client_ip is the peer; a client\'s X-Forwarded-For is not believed', async (t) => {
  const gw = await startGateway(t)
  const alice = await gw.fixtures.personalKey('alice')
  const res = await gw.get('/api/v1/users', alice.key, { 'X-Forwarded-For': '203.0.113.7' })
  t.equal(res.status, 200)
  const line = await gw.logOf(res)
  t.equal(line?.client_ip, '127.0.0.1', 'the TCP peer')
  t.equal(line?.rule, 'GET /api/v1/users', 'the rule by its pattern, not an index')
  const denied = await gw.get('/api/v1/users')
  t.equal((await gw.logOf(denied))?.client_ip, '127.0.0.1', 'on a denial too')
  t.notOk('rule' in ((await gw.logOf(denied)) ?? {}), 'no rule matched: no rule field')
})

t.test('data plane behind a trusted proxy: client_ip is the client it reports', async (t) => {
  const gw = await startGateway(t, { yaml: 'trusted_proxies: ["127.0.0.1"]' })
  const alice = await gw.fixtures.personalKey('alice')
  const res = await gw.get('/api/v1/users', alice.key, { 'X-Forwarded-For': '198.51.100.1, 203.0.113.7' })
  t.equal(res.status, 200)
  t.equal((await gw.logOf(res))?.client_ip, '203.0.113.7', 'the entry the trusted proxy added (the last)')
  const direct = await gw.get('/api/v1/users', alice.key)
  t.equal((await gw.logOf(direct))?.client_ip, '127.0.0.1', 'without X-Forwarded-For: the peer')
  const odd = await gw.get('/api/v1/users', alice.key, { 'X-Forwarded-For': '"}{"x\\' })
  t.equal((await gw.logOf(odd))?.client_ip, '127.0.0.1', 'an entry that is not an IP address is not believed: the peer')
})

t.test('authorizer: client_ip is the client the trusted peer reports; rule by pattern', async (t) => {
  const gw = await startGateway(t, { yaml: 'authz_listen: "127.0.0.1:0"' })
  const alice = await gw.fixtures.personalKey('alice')
  const res = await gw.authz('GET', '/', { Authorization: `Bearer ${alice.key}`, 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': '/api/v1/users', 'X-Forwarded-For': '203.0.113.9' })
  t.equal(res.status, 200)
  const line = await gw.logOf(res)
  t.equal(line?.mode, 'authz')
  t.equal(line?.client_ip, '203.0.113.9')
  t.equal(line?.rule, 'GET /api/v1/users')
})

t.test('/metrics: keygate_build_info, and status and status_class on both request metrics', async (t) => {
  const gw = await startGateway(t)
  const alice = await gw.fixtures.personalKey('alice')
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 200)
  let f = parsePromText((await gw.admin('GET', '/metrics')).body)
  for (let i = 0; i < 50 && valueOf(f, 'keygate_request_duration_seconds_count', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx' }) === undefined; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20))
    f = parsePromText((await gw.admin('GET', '/metrics')).body)
  }
  t.equal(valueOf(f, 'keygate_build_info', { version, node: process.versions.node }), 1)
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx', reason: 'allowed' }), 1)
  t.equal(valueOf(f, 'keygate_request_duration_seconds_count', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx' }), 1)
})
