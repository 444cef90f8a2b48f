/**
 * Failed admin sign-ins were unlimited: a peer could guess admin tokens or keys as
 * fast as the admin listener answered. Now each peer address has
 * `admin.sign_in_failures_per_minute` failures (default 10) of each kind of
 * credential (the admin token, keys); past them every sign-in of that kind from that
 * peer gets 429 with Retry-After until its minute is over, before its credential is
 * checked (the right token included), and both are counted in metrics. A missing credential is no guess and does not count.
 */
import t from 'tap'
import { adminCall as call, startGateway, type TestGateway } from '../helpers/gateway.js'
import { parsePromText, valueOf } from '../helpers/prom-text.js'

const TOKEN = 'limit-admin-token-0123456789abcdef'

async function metric (gw: TestGateway, name: string): Promise<number | undefined> {
  return valueOf(parsePromText((await gw.admin('GET', '/metrics')).body), name)
}

t.test('the default: 10 failed sign-ins a minute per peer, then 429 with Retry-After', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  t.equal(gw.config.admin.sign_in_failures_per_minute, 10)

  for (let i = 0; i < 3; i++) t.equal((await call(gw, 'GET', '/admin/v1/session')).status, 401, 'no credential: 401, not counted')
  for (let i = 0; i < 10; i++) {
    // (wrong tokens: key failures are counted apart, sign-in-limit-concurrency.test.ts)
    const guess = `wrong-token-${i}-0123456789abcdef`
    t.equal((await call(gw, 'GET', '/admin/v1/session', guess)).status, 401, `failure ${i + 1}: 401`)
    if (i === 8) t.equal((await call(gw, 'GET', '/admin/v1/session', TOKEN)).status, 200, 'a success in between is served, and resets nothing')
  }

  const limited = await call(gw, 'GET', '/admin/v1/session', 'wrong-token-again-0123456789abcdef')
  t.equal(limited.status, 429)
  t.same(limited.json(), { error: { code: 'rate_limited', message: 'Too many requests', status: 429 } })
  const retryAfter = limited.headers['retry-after']
  t.match(retryAfter, /^[0-9]+$/, 'Retry-After: whole seconds')
  t.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 60, `Retry-After ${String(retryAfter)} is within the minute`)

  const rightToken = await call(gw, 'GET', '/admin/v1/session', TOKEN)
  t.equal(rightToken.status, 429, 'the right token too: no credential is checked while the peer is limited')
  const line = await gw.logOf(rightToken)
  t.match(line, { status: 429, detail: /failed sign-ins/ })
  t.equal(line?.actor, undefined, 'nobody signed in')

  t.equal(await metric(gw, 'keygate_admin_sign_in_failures_total'), 10, 'failures counted (missing credentials are not)')
  t.equal(await metric(gw, 'keygate_admin_sign_in_limited_total'), 2, 'limited requests counted')
  t.equal((await gw.get('/api/v1/users', 'kg_AAAAAAAAAAAAAAAA_' + 'A'.repeat(38))).status, 401, 'the data plane is not limited by it')
  t.equal((await gw.admin('GET', '/healthz')).status, 200, 'nor are the admin plane\'s probes')
})

t.test('admin.sign_in_failures_per_minute sets the limit', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN }, yaml: 'admin: { sign_in_failures_per_minute: 2 }\n' })
  t.equal((await call(gw, 'GET', '/admin/v1/keys', 'nope-0123456789abcdef')).status, 401)
  t.equal((await call(gw, 'POST', '/admin/v1/keys', 'nope-0123456789abcdef', { type: 'bot' })).status, 401)
  t.equal((await call(gw, 'GET', '/admin/v1/nothing-here', TOKEN)).status, 429, 'the third request from the peer: 429, before routing')
})
