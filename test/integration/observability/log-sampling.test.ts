// `log.allowed_sample_ratio` (docs/operating.md#sampled-lines): below 1, that share of the
// lines of requests that passed and were answered below 500 is written, each with
// `sample_ratio`; a refusal's, a 5xx's and a shadow rule's disagreement's line is always
// written, and metrics count every request. Lines are written in order, so a request's
// missing line is read after a later request's line has arrived.
import t from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import type { RawResponse } from '../../helpers/raw-http.js'

const SHADOW = `
shadow_rules:
  - { method: GET, path: /api/v1/users, permissions: [users:admin] }
`

/** the line of `later`, once it arrived: every line of an earlier request is in by then */
async function settled (gw: TestGateway, later: RawResponse): Promise<void> {
  if (await gw.logOf(later) === undefined) throw new Error('the later request has no line')
}

const linesOf = (gw: TestGateway, responses: RawResponse[]): number => {
  const ids = new Set(responses.map((r) => r.headers['x-request-id']))
  return gw.logs.filter((l) => ids.has(l.req_id as string)).length
}

/** keygate_requests_total's sum over the series whose labels include `labels` */
async function requestsCounted (gw: TestGateway, labels: string): Promise<number> {
  const text = (await gw.admin('GET', '/metrics')).body
  let sum = 0
  for (const line of text.split('\n')) {
    if (line.startsWith('keygate_requests_total{') && line.includes(labels)) sum += Number(line.split(' ').pop())
  }
  return sum
}

t.test('ratio 0: no line for a passed request; every refusal, 5xx and shadow disagreement has its line', async (t) => {
  const gw = await startGateway(t, { yaml: 'log: { allowed_sample_ratio: 0 }\n' })
  const alice = await gw.fixtures.personalKey('alice')

  const allowed: RawResponse[] = []
  for (let i = 0; i < 20; i++) allowed.push(await gw.get('/api/v1/users', alice.key))
  t.ok(allowed.every((r) => r.status === 200), 'all 20 allowed')
  const missing = await gw.get('/api/v1/users')
  const forbidden = await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${alice.key}` }, '{}')
  gw.upstream.setMode({ kind: 'status', status: 503 })
  const upstreamError = await gw.get('/api/v1/users', alice.key)
  gw.upstream.setMode('echo')
  t.equal(missing.status, 401)
  t.equal(forbidden.status, 403)
  t.equal(upstreamError.status, 503, "the upstream's own 503")

  await settled(gw, upstreamError)
  t.equal(linesOf(gw, allowed), 0, 'no line for the 20 allowed requests')
  t.match(await gw.logOf(missing), { status: 401, reason: 'missing_credential' }, 'the 401 is logged')
  t.match(await gw.logOf(forbidden), { status: 403, reason: 'missing_permission' }, 'the 403 is logged')
  t.match(await gw.logOf(upstreamError), { status: 503, reason: 'allowed', upstream_status: 503 }, 'a 5xx of an allowed request is logged')
  t.notOk(gw.logs.some((l) => 'sample_ratio' in l), 'no line written is a sampled one')
  t.equal(await requestsCounted(gw, 'reason="allowed"}'), 21, 'metrics count every allowed request')
})

t.test('ratio 0: a shadow rule that disagrees is always logged', async (t) => {
  const gw = await startGateway(t, { yaml: `log: { allowed_sample_ratio: 0 }\n${SHADOW}` })
  const alice = await gw.fixtures.personalKey('alice')
  const res = await gw.get('/api/v1/users', alice.key)
  t.equal(res.status, 200)
  t.match(await gw.logOf(res), { reason: 'allowed', shadow: { live: 'allow', shadow: 'missing_permission' } })
})

t.test('ratio 0.5: about half the passed requests are logged, each line says so', async (t) => {
  const gw = await startGateway(t, { yaml: 'log: { allowed_sample_ratio: 0.5 }\n' })
  const alice = await gw.fixtures.personalKey('alice')
  const allowed: RawResponse[] = []
  for (let i = 0; i < 200; i++) allowed.push(await gw.get('/api/v1/users', alice.key))
  const refused = await gw.get('/api/v1/users')
  await settled(gw, refused)
  const n = linesOf(gw, allowed)
  // binomial(200, 0.5): outside [50, 150] with a probability under 1e-12
  t.ok(n >= 50 && n <= 150, `${n} of 200 allowed requests logged`)
  const sampled = gw.logs.filter((l) => l.reason === 'allowed')
  t.ok(sampled.length > 0 && sampled.every((l) => l.sample_ratio === 0.5), 'each sampled line carries sample_ratio 0.5')
  t.equal((await gw.logOf(refused))?.sample_ratio, undefined, "a refusal's line carries none")
})

t.test('the authorizer listener samples its allowed decisions alike', async (t) => {
  const gw = await startGateway(t, { yaml: 'log: { allowed_sample_ratio: 0 }\nauthz_listen: "127.0.0.1:0"\n' })
  const alice = await gw.fixtures.personalKey('alice')
  const headers = { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': '/api/v1/users' }
  const allowed = await gw.authz('GET', '/', { ...headers, Authorization: `Bearer ${alice.key}` })
  const refused = await gw.authz('GET', '/', headers)
  t.equal(allowed.status, 200)
  t.equal(refused.status, 401)
  await settled(gw, refused)
  t.equal(linesOf(gw, [allowed]), 0, 'no line for the allowed decision')
  t.match(await gw.logOf(refused), { mode: 'authz', status: 401, reason: 'missing_credential' })
})

t.test('by default (1) every line is written, none with sample_ratio', async (t) => {
  const gw = await startGateway(t)
  const alice = await gw.fixtures.personalKey('alice')
  const res = await gw.get('/api/v1/users', alice.key)
  const line = await gw.logOf(res)
  t.match(line, { status: 200, reason: 'allowed' })
  t.notOk(line !== undefined && 'sample_ratio' in line, 'no sample_ratio')
})
