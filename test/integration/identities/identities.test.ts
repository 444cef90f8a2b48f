/**
 * Identities and metadata (docs/identities.md), on a running gateway with real Redis and a
 * real upstream, requests over raw sockets: two BOT keys of one identity share its rate
 * limit and its quota; `meta` (the key's fields over the identity's) and the external id
 * reach the upstream and the signed assertion exactly, and a client's copies never do; a
 * change of the identity reaches cached keys; 1 KB + 1 byte of meta is refused with
 * `details`; delete with and without --force; an org admin on its own org only. A marker
 * value in `meta` is never in a log line, /metrics, the audit trail, an exported span
 * (tracing to a real OTLP/HTTP receiver), or the error body, headers and log line of a
 * refused request (403, 429) of a key with meta.
 */
import t from 'tap'
import { decodeJwt } from 'jose'
import { cliEnv, runCli } from '../../helpers/cli.js'
import { adminCall as call, eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { rawValues } from '../../helpers/upstream.js'
import { writeKeyFile } from '../../helpers/assertion-keys.js'
import { startOtlpReceiver } from '../../helpers/otlp-receiver.js'

const TOKEN = 'identities-admin-token-0123456789abcdef'
const MARKER = 'zq-meta-marker-7f3a9c'

const ASSERTION_YAML = `identity:
  header_prefix: X-Auth-
  assertion:
    enabled: true
    bind: request
`

async function gateway (t: Parameters<typeof startGateway>[0]): Promise<TestGateway> {
  const keyFile = writeKeyFile('EdDSA')
  return await startGateway(t, {
    yaml: ASSERTION_YAML,
    env: { KEYGATE_ADMIN_TOKEN: TOKEN, KEYGATE_ASSERTION_KEY_FILE: keyFile.file }
  })
}

async function botKey (gw: TestGateway, identity: string, meta?: Record<string, unknown>): Promise<{ id: string, key: string }> {
  const r = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'acme', identity, ...meta === undefined ? {} : { meta } })
  if (r.status !== 201) throw new Error(`key create: ${r.status} ${r.body}`)
  return r.json() as { id: string, key: string }
}

function decodeMeta (value: string | undefined): unknown {
  return value === undefined ? undefined : JSON.parse(Buffer.from(value, 'base64url').toString('utf8'))
}

t.test('meta and the external id reach the upstream and the assertion exactly; a client cannot forge them', async (t) => {
  const gw = await gateway(t)
  const put = await call(gw, 'PUT', '/admin/v1/identities/cust-1', TOKEN, {
    org: 'acme', external_id: 'cus_42', meta: { plan: 'pro', seats: 3, marker: MARKER }
  })
  t.equal(put.status, 201, put.body)
  const k = await botKey(gw, 'cust-1', { plan: 'enterprise', region: 'eu' })
  const res = await gw.send('GET', '/api/v1/users', [
    ['Authorization', `Bearer ${k.key}`],
    ['X-Auth-Meta', 'eyJmb3JnZWQiOnRydWV9'],
    ['x_auth_identity', 'forged'],
    ['X-AUTH-IDENTITY', 'forged-too']
  ])
  t.equal(res.status, 200, res.body)
  const req = gw.upstream.last()
  const expected = { plan: 'enterprise', seats: 3, marker: MARKER, region: 'eu' }
  t.same(rawValues(req, 'x-auth-identity'), ['cus_42'], 'X-Auth-Identity: the external id, once')
  t.equal(rawValues(req, 'x-auth-meta').length, 1, 'X-Auth-Meta once')
  t.same(decodeMeta(rawValues(req, 'x-auth-meta')[0]), expected, 'the key\'s fields over the identity\'s')
  t.same(rawValues(req, 'x_auth_identity'), [], 'the underscore spelling dropped')
  const claims = decodeJwt(rawValues(req, 'x-auth-assertion')[0] ?? '')
  t.same(claims.meta, expected, 'the assertion\'s meta claim')
  t.same(claims.identity, { id: 'cust-1', external_id: 'cus_42' }, 'the assertion\'s identity claim')

  // a key with no identity and no meta: neither header, and a client's copies are dropped
  const plain = await gw.fixtures.botKey('reader', 'acme')
  await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${plain.key}`], ['X-Auth-Meta', 'e30'], ['X-Auth-Identity', 'x']])
  t.same(rawValues(gw.upstream.last(), 'x-auth-meta'), [], 'no meta header for a key without meta')
  t.same(rawValues(gw.upstream.last(), 'x-auth-identity'), [], 'no identity header for a key without an identity')

  // a change of the identity reaches the cached key within a second
  await call(gw, 'PUT', '/admin/v1/identities/cust-1', TOKEN, { external_id: 'cus_43', meta: { plan: 'free' } })
  const ms = await eventually(async () => {
    await gw.get('/api/v1/users', k.key)
    return rawValues(gw.upstream.last(), 'x-auth-identity')[0] === 'cus_43'
  }, 1000, 10)
  t.ok(ms >= 0, 'the new external id applies within 1 s')
  t.same(decodeMeta(rawValues(gw.upstream.last(), 'x-auth-meta')[0]), { plan: 'enterprise', region: 'eu' })

  // the marker is in no log line, metric, audit entry
  const metrics = await call(gw, 'GET', '/metrics', TOKEN)
  const audit = await call(gw, 'GET', '/admin/v1/audit?limit=500', TOKEN)
  t.equal(audit.status, 200)
  for (const [what, text] of [['logs', gw.rawLogs.join('\n')], ['metrics', metrics.body], ['audit', audit.body]] as const) {
    t.notOk(text.includes(MARKER), `the meta marker is not in the ${what}`)
  }
})

t.test('the marker is in no span, and in no error body, response header or log line of a refused request', async (t) => {
  const otlp = await startOtlpReceiver()
  t.teardown(() => otlp.close())
  const keyFile = writeKeyFile('EdDSA')
  const gw = await startGateway(t, {
    yaml: `${ASSERTION_YAML}tracing: { otlp_endpoint: "${otlp.url}", sample_ratio: 1.0 }\n`,
    env: { KEYGATE_ADMIN_TOKEN: TOKEN, KEYGATE_ASSERTION_KEY_FILE: keyFile.file }
  })
  t.equal((await call(gw, 'PUT', '/admin/v1/identities/traced', TOKEN, {
    org: 'acme', external_id: 'tr-1', meta: { marker: MARKER }, rate_limit: '2/1m'
  })).status, 201)
  const k = await botKey(gw, 'traced', { note: MARKER })
  const traced = (trace: string): Array<[string, string]> =>
    [['Authorization', `Bearer ${k.key}`], ['traceparent', `00-${trace}-00f067aa0ba902b7-01`]]
  const TRACES = ['4bf92f3577b34da6a3ce929d0e0e4730', '4bf92f3577b34da6a3ce929d0e0e4731', '4bf92f3577b34da6a3ce929d0e0e4732']
  const allowed = await gw.send('GET', '/api/v1/users', traced(TRACES[0] as string))
  t.equal(allowed.status, 200)
  // the meta as the upstream got it (base64url of the JSON): neither spelling may leave the gateway elsewhere
  const header = rawValues(gw.upstream.last(), 'x-auth-meta')[0] ?? ''
  t.same(decodeMeta(header), { marker: MARKER, note: MARKER }, 'the upstream got the marker')
  const forbidden = await gw.send('POST', '/api/v1/users', traced(TRACES[1] as string))
  t.equal(forbidden.status, 403, 'a reader may not write')
  t.equal((await gw.get('/api/v1/users', k.key)).status, 200)
  const limited = await gw.send('GET', '/api/v1/users', traced(TRACES[2] as string))
  t.equal(limited.status, 429, 'over the identity\'s 2/1m')

  for (const [what, res] of [['403', forbidden], ['429', limited]] as const) {
    t.match(res.body, /"error"/, `the ${what} has its error body`)
    const text = res.body + JSON.stringify(res.rawHeaders)
    t.notOk(text.includes(MARKER) || text.includes(header), `the ${what}'s body and headers hold no meta`)
    const line = await gw.logOf(res)
    t.equal(line?.status, Number(what), `the ${what}'s log line`)
    t.notOk(JSON.stringify(line).includes(MARKER) || JSON.stringify(line).includes(header), `the ${what}'s log line holds no meta`)
  }
  await gw.app.tracing.flush()
  for (const trace of TRACES) t.ok(otlp.spans.some((s) => s.traceId === trace), `a span of trace ${trace.slice(-1)} arrived`)
  const raw = Buffer.concat(otlp.bodies)
  const exported = raw.toString('utf8')
  // (OTLP protobuf, the default encoding, carries a trace id as its 16 bytes)
  t.ok(raw.includes(Buffer.from(TRACES[1] as string, 'hex')), 'the export holds the refused requests\' spans')
  t.notOk(exported.includes(MARKER), 'the marker is in no exported span')
  t.notOk(exported.includes(header), 'nor the X-Auth-Meta value')
  const logs = gw.rawLogs.join('\n')
  t.notOk(logs.includes(MARKER) || logs.includes(header), 'nor in any log line')
})

t.test('two BOT keys of one identity share its rate limit and its quota', async (t) => {
  const gw = await gateway(t)
  t.equal((await call(gw, 'PUT', '/admin/v1/identities/limited', TOKEN, { org: 'acme', external_id: 'lim', rate_limit: '3/1m' })).status, 201)
  const a = await botKey(gw, 'limited')
  const b = await botKey(gw, 'limited')
  const statuses = []
  for (const k of [a, b, a, b]) statuses.push((await gw.get('/api/v1/users', k.key)).status)
  t.same(statuses, [200, 200, 200, 429], 'the fourth request of the two keys is over the identity\'s 3/1m')
  const other = await gw.fixtures.botKey('reader', 'acme')
  t.equal((await gw.get('/api/v1/users', other.key)).status, 200, 'a key outside the identity is not limited by it')

  t.equal((await call(gw, 'PUT', '/admin/v1/identities/metered', TOKEN, { org: 'acme', external_id: 'met', quota: '3/day' })).status, 201)
  const c = await botKey(gw, 'metered')
  const d = await botKey(gw, 'metered')
  const spent = []
  for (const k of [c, d, c, d]) {
    const r = await gw.get('/api/v1/users', k.key)
    spent.push(`${r.status} ${r.body}`)
  }
  t.same(spent.map((s) => s.split(' ')[0]), ['200', '200', '200', '429'], 'one allowance for both keys')
  t.match(spent[3], 'quota_exceeded')
  const shown = (await call(gw, 'GET', '/admin/v1/identities/metered', TOKEN)).json() as Record<string, any>
  t.match(shown, { keys: [c.id, d.id].sort(), allowance: { quota: { limit: 3, used: 3, remaining: 0 } } }, 'the identity\'s keys and usage')
  const meter = await runCli(['identities', 'meter', 'metered', '--quota', '10/day'], cliEnv(gw))
  t.equal(meter.code, 0, meter.stderr)
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', c.key)).status === 200, 1000, 10) >= 0, 'a raised quota applies')
})

t.test('meta of 1 KB is taken, 1 KB + 1 byte refused with 400 and details', async (t) => {
  const gw = await gateway(t)
  const of = (n: number): Record<string, string> => ({ m: 'x'.repeat(n - 8) }) // {"m":"…"}: 8 bytes around the text
  t.equal(JSON.stringify(of(1024)).length, 1024)
  t.equal((await call(gw, 'PUT', '/admin/v1/identities/big', TOKEN, { org: 'acme', external_id: 'big', meta: of(1024) })).status, 201, '1024 bytes')
  for (const [path, method, body] of [
    ['/admin/v1/identities/bigger', 'PUT', { org: 'acme', external_id: 'bigger', meta: of(1025) }],
    ['/admin/v1/keys', 'POST', { type: 'bot', role: 'reader', org: 'acme', meta: of(1025) }]
  ] as const) {
    const r = await call(gw, method, path, TOKEN, body)
    t.equal(r.status, 400, `${method} ${path}: 1025 bytes refused`)
    const err = r.json() as { error: { details?: Array<{ field: string, reason: string }> } }
    t.match(err.error.details, [{ field: 'meta', reason: /1025 bytes/ }], 'details name the field and the size')
    t.notOk(r.body.includes('xxxxxxxx'), 'the value is not echoed')
  }
  t.equal(await gw.client.exists(gw.fixtures.keys.identity('bigger')), 0, 'nothing written')
  const cli = await runCli(['identities', 'put', 'clibig', '--org', 'acme', '--external-id', 'c', '--meta', JSON.stringify(of(1025))], cliEnv(gw))
  t.not(cli.code, 0, 'the CLI refuses it too')
  t.match(cli.stderr, /1025 bytes/)
})

t.test('delete: refused while keys name the identity; --force revokes them', async (t) => {
  const gw = await gateway(t)
  const env = cliEnv(gw)
  const put = await runCli(['identities', 'put', 'gone', '--org', 'acme', '--external-id', 'g-1', '--json'], env)
  t.equal(put.code, 0, put.stderr)
  const created = await runCli(['keys', 'create', '--type', 'bot', '--role', 'reader', '--org', 'acme', '--identity', 'gone', '--json'], env)
  t.equal(created.code, 0, created.stderr)
  const k = JSON.parse(created.stdout) as { id: string, key: string, identity?: string }
  t.equal(k.identity, 'gone')
  t.equal((await gw.get('/api/v1/users', k.key)).status, 200)
  const list = await runCli(['identities', 'list', '--json'], env)
  t.match(JSON.parse(list.stdout), [{ id: 'gone', external_id: 'g-1', keys: [k.id] }], 'identities list')

  const refused = await runCli(['identities', 'delete', 'gone'], env)
  t.not(refused.code, 0, 'refused without --force')
  t.match(refused.stderr, /active key/)
  t.equal(await gw.client.exists(gw.fixtures.keys.identity('gone')), 1, 'still there')
  const api = await call(gw, 'DELETE', '/admin/v1/identities/gone', TOKEN)
  t.equal(api.status, 409, 'the API: 409')

  const forced = await runCli(['identities', 'delete', 'gone', '--force', '--json'], env)
  t.equal(forced.code, 0, forced.stderr)
  t.same(JSON.parse(forced.stdout), { deleted: 'gone', revoked: [k.id] })
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', k.key)).status === 401, 1000, 10) >= 0, 'its key is refused')
  t.equal(await gw.client.exists(gw.fixtures.keys.identity('gone')), 0, 'the record is gone')
  t.equal(await gw.client.hget(gw.fixtures.keys.orgIdentities('acme'), 'g-1'), null, 'and its external id')

  // a key naming an identity that does not exist is refused
  await runCli(['identities', 'put', 'later', '--org', 'acme', '--external-id', 'l-1'], env)
  const k2 = await botKey(gw, 'later')
  await gw.client.del(gw.fixtures.keys.identity('later'))
  t.ok(await eventually(async () => (await gw.get('/api/v1/users', k2.key)).status === 401, 1000, 10) >= 0, 'identity_missing: 401')
})

t.test('an org admin manages its own org\'s identities only; external ids are unique in an org', async (t) => {
  const gw = await gateway(t)
  const orgAdmin = await gw.fixtures.botKey('admin', 'acme')
  await gw.client.hset(gw.fixtures.keys.role('admin'), 'permissions', 'keygate:org:admin users:read')
  const mine = await call(gw, 'PUT', '/admin/v1/identities/own', orgAdmin.key, { external_id: 'o-1', rate_limit: '100/1s' })
  t.equal(mine.status, 201, mine.body)
  t.match(mine.json(), { identity: { org: 'acme' } }, 'in the caller\'s org by default')
  t.equal((await call(gw, 'PUT', '/admin/v1/identities/theirs', TOKEN, { org: 'globex', external_id: 't-1' })).status, 201)
  t.equal((await call(gw, 'GET', '/admin/v1/identities/theirs', orgAdmin.key)).status, 404, 'another org\'s: 404')
  t.equal((await call(gw, 'PUT', '/admin/v1/identities/theirs', orgAdmin.key, { meta: { a: 1 } })).status, 404, 'not changed either')
  t.equal((await call(gw, 'DELETE', '/admin/v1/identities/theirs', orgAdmin.key)).status, 404)
  t.equal((await call(gw, 'PUT', '/admin/v1/identities/new', orgAdmin.key, { org: 'globex', external_id: 'n' })).status, 403, 'none made in another org')
  const listed = (await call(gw, 'GET', '/admin/v1/identities', orgAdmin.key)).json() as { identities: Array<{ id: string }> }
  t.same(listed.identities.map((i) => i.id), ['own'], 'its own org\'s only')
  const dup = await call(gw, 'PUT', '/admin/v1/identities/dup', TOKEN, { org: 'acme', external_id: 'o-1' })
  t.equal(dup.status, 409, 'an external id names one identity per org')
  t.equal((await call(gw, 'PUT', '/admin/v1/identities/dup', TOKEN, { org: 'globex', external_id: 'o-1' })).status, 201, 'in another org it may repeat')
  const foreign = await call(gw, 'POST', '/admin/v1/keys', orgAdmin.key, { type: 'bot', role: 'reader', identity: 'theirs' })
  t.equal(foreign.status, 400, 'a key never names another org\'s identity')
})
