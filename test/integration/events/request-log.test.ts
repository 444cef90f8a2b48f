/**
 * The request log per key (docs/request-log.md) with a real gateway, Redis and upstream:
 * the last `request_log.per_key` decisions of a key after a burst of concurrent
 * requests, newest first, through GET /admin/v1/keys/:id/requests and `keygate keys
 * requests`; never a query string, a header value or a body (markers in each, searched
 * in Redis and in both outputs); nothing recorded for a key presented without its
 * secret; scoped like reading the key (an org admin of another org gets 404).
 */
import t from 'tap'
import { adminCall, eventually, startGateway } from '../../helpers/gateway.js'
import { cliEnv, runCli } from '../../helpers/cli.js'

const TOKEN = 'request-log-admin-token-0123456789'
const PER_KEY = 5
const Q = 'qmarker7c1f'
const H = 'hmarker0b9e'
const B = 'bmarker55aa'

interface Logged { time: string, method: string, path: string, status: number, reason: string, latency_ms: number, client: string, trace_id: string }

t.test('a key\'s last decisions, newest first, without query, header or body', async (t) => {
  const gw = await startGateway(t, {
    env: { KEYGATE_ADMIN_TOKEN: TOKEN },
    yaml: `request_log: { per_key: ${PER_KEY}, flush_ms: 100 }`
  })
  const alice = await gw.fixtures.personalKey('alice')
  const other = await gw.fixtures.personalKey('alice')
  const requestsOf = async (id: string, query = ''): Promise<{ status: number, body: string, list: Logged[] }> => {
    const res = await adminCall(gw, 'GET', `/admin/v1/keys/${id}/requests${query}`, TOKEN)
    return { status: res.status, body: res.body, list: res.status === 200 ? (res.json() as { requests: Logged[] }).requests : [] }
  }

  // a burst of concurrent requests, each with a marker in its query, a header and a body
  await Promise.all(Array.from({ length: 60 }, async (_, i) => await gw.send(
    i % 2 === 0 ? 'GET' : 'POST',
    `/api/v1/users?${Q}=${i}`,
    { Authorization: `Bearer ${alice.key}`, 'X-Marker': H, 'Content-Type': 'text/plain' },
    i % 2 === 0 ? undefined : B)))
  // then the last five, one after the other
  const last = [
    ['/api/v1/users', 200], ['/api/v1/orgs/acme/a', 403], ['/api/v1/users', 200], ['/api/v1/orgs/globex/b', 403],
    ['/api/v1/users', 200]
  ] as const
  const traces: string[] = []
  for (const [path, status] of last) {
    const res = await gw.get(`${path}?${Q}=last`, alice.key, { 'X-Marker': H })
    t.equal(res.status, status, `${path} answered ${status}`)
    traces.push(String((await gw.logOf(res))?.trace_id))
  }
  // a key presented without its secret: not its holder, nothing recorded
  const wrong = `${other.key.slice(0, -8)}AAAAAAAA`
  t.equal((await gw.get('/api/v1/users', wrong)).status, 401)

  const waited = await eventually(async () => (await requestsOf(alice.id)).list[0]?.path === '/api/v1/users' &&
    (await requestsOf(alice.id)).list.length === PER_KEY, 5000)
  t.ok(waited >= 0, 'the decisions are written off the request path, within a flush')
  const { list, body } = await requestsOf(alice.id)
  t.same(list.map((r) => [r.path, r.status]), [...last].reverse().map(([p, s]) => [p, s]),
    'exactly the last per_key decisions, newest first')
  for (const r of list) {
    t.equal(r.method, 'GET')
    t.match(r.reason, /^[a-z_]+$/)
    t.ok(r.latency_ms >= 0, 'a latency')
    t.equal(r.client, '127.0.0.1', 'the client address')
    t.match(r.trace_id, /^[0-9a-f]{32}$/, 'a trace id')
    t.ok(Date.now() - Date.parse(r.time) < 60_000, 'a recent time')
  }
  t.equal(list[0]?.reason, 'allowed')
  t.same(list.map((r) => r.trace_id).reverse(), traces, 'the trace id of each request (the access log line\'s)')
  t.same((await requestsOf(alice.id, '?status=4xx')).list.map((r) => r.status), [403, 403], 'filtered by class')
  const limited = await requestsOf(alice.id, '?status=200&limit=2')
  t.equal(limited.status, 200, limited.body)
  t.same(limited.list.map((r) => r.status), [200, 200], 'by status, limited')
  t.equal((await requestsOf(alice.id, '?status=4x')).status, 400, 'a status filter of another shape is refused')

  // Redis: the one list, trimmed, expiring within 24 h; no marker anywhere in it
  const name = gw.fixtures.keys.keyRequests(alice.id)
  t.equal(await gw.client.llen(name), PER_KEY, 'trimmed to per_key in Redis')
  const ttl = await gw.client.ttl(name)
  t.ok(ttl > 0 && ttl <= 86_400, `expires within 24 h (${ttl} s)`)
  t.equal(await gw.client.exists(gw.fixtures.keys.keyRequests(other.id)), 0, 'nothing for a key without its secret')
  const stored = (await gw.client.lrange(name, 0, -1)).join('\n')
  const cli = await runCli(['keys', 'requests', alice.id, '--json'], cliEnv(gw))
  t.equal(cli.code, 0, cli.stderr)
  t.same((JSON.parse(cli.stdout) as { requests: Logged[] }).requests, list, 'the CLI reads the same decisions')
  const table = await runCli(['keys', 'requests', alice.id, '--status', '403'], cliEnv(gw))
  t.equal(table.code, 0, table.stderr)
  t.equal(table.stdout.split('\n').filter((l) => l.includes('/api/v1/orgs/')).length, 2, 'the CLI\'s table, filtered')
  for (const [where, text] of [['Redis', stored], ['the API', body], ['the CLI', cli.stdout + table.stdout]] as const) {
    for (const marker of [Q, H, B, '?', alice.key]) t.notOk(text.includes(marker), `no ${marker} in ${where}`)
  }

  // scoped like reading the key: another org's admin gets 404, as for a key that does not exist
  await gw.fixtures.role('orgadmin', ['keygate:org:admin'])
  await gw.fixtures.user('gina', 'globex', 'orgadmin')
  const gina = await gw.fixtures.personalKey('gina')
  t.equal((await adminCall(gw, 'GET', `/admin/v1/keys/${alice.id}/requests`, gina.key)).status, 404, 'another org: 404')
  t.equal((await adminCall(gw, 'GET', '/admin/v1/keys/AAAAAAAAAAAAAAAA/requests', TOKEN)).status, 404, 'no such key: 404')
  const openapi = await adminCall(gw, 'GET', '/admin/v1/openapi.json', TOKEN)
  t.ok((openapi.json() as { paths: Record<string, unknown> }).paths['/admin/v1/keys/{id}/requests'], 'in the OpenAPI document')
})

t.test('request_log.enabled false records nothing', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN }, yaml: 'request_log: { enabled: false, flush_ms: 100 }' })
  const alice = await gw.fixtures.personalKey('alice')
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 200)
  await gw.app.requests.flush()
  t.equal(await gw.client.exists(gw.fixtures.keys.keyRequests(alice.id)), 0)
  const res = await adminCall(gw, 'GET', `/admin/v1/keys/${alice.id}/requests`, TOKEN)
  t.same(res.json(), { requests: [] })
})
