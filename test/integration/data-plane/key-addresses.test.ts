/**
 * A key bound to addresses (`allowed_cidrs`, docs/key-scopes.md): a request from any other
 * client address is refused after authentication and before the rate limits, 403
 * `address_not_allowed`, and counts nothing (RateLimit-Remaining unchanged). The client
 * address is the TCP peer (IPv4 and IPv6 loopback), the client a trusted proxy
 * reports (X-Forwarded-For), or in authorizer mode the client the trusted peer reports.
 */
import t from 'tap'
import { eventually, startGateway } from '../../helpers/gateway.js'
import { send } from '../../helpers/raw-http.js'

const LIMITS = 'rate_limits: { default: "5/1m" }\n'

t.test('over IPv4 and IPv6 loopback; a refused request counts nothing', async (t) => {
  const gw = await startGateway(t, { yaml: LIMITS, host: '::' })
  const f = gw.fixtures
  const { result: v4 } = await f.admin.createKey({ type: 'personal', user: 'alice', allowedCidrs: ['127.0.0.0/8'] })
  const { result: v6 } = await f.admin.createKey({
    type: 'bot',
    role: 'reader',
    org: 'acme',
    allowedCidrs: ['::1/128']
  })
  const get = async (key: string, host: string): Promise<Awaited<ReturnType<typeof send>>> =>
    await send(gw.port, 'GET', '/api/v1/users', { Authorization: `Bearer ${key}` }, undefined, { host })

  const first = await get(v4.key, '127.0.0.1')
  t.equal(first.status, 200, 'an IPv4 key from 127.0.0.1 (an IPv4-mapped peer on a dual-stack socket)')
  t.equal(first.headers['ratelimit-remaining'], '4')
  for (let i = 0; i < 3; i++) {
    const refused = await get(v4.key, '::1')
    t.equal(refused.status, 403, 'the IPv4-bound key from ::1')
    t.match(refused.json(), { error: { code: 'forbidden' } })
    t.equal((await gw.logOf(refused))?.reason, 'address_not_allowed')
  }
  t.equal((await get(v4.key, '127.0.0.1')).headers['ratelimit-remaining'], '3', 'the refused requests counted nothing')

  t.equal((await get(v6.key, '::1')).status, 200, 'an IPv6 key from ::1')
  t.equal((await get(v6.key, '127.0.0.1')).status, 403, 'the IPv6-bound key from 127.0.0.1')

  // restricted while cached: every gateway applies the edit
  await f.admin.restrictKey(v4.id, { allowedCidrs: ['::1', '10.0.0.0/8'] })
  t.ok(await eventually(async () => (await get(v4.key, '::1')).status === 200, 1000) >= 0, 'a widened address list applies within 1 s')
  t.equal((await get(v4.key, '127.0.0.1')).status, 403)
  await f.admin.restrictKey(v4.id, { allowedCidrs: null })
  t.ok(await eventually(async () => (await get(v4.key, '127.0.0.1')).status === 200, 1000) >= 0, 'removed: any address')
})

t.test('behind a trusted proxy: the client it reports; an untrusted peer\'s X-Forwarded-For is not believed', async (t) => {
  const trusted = await startGateway(t, { yaml: 'trusted_proxies: ["127.0.0.1"]\n' + LIMITS })
  const { result: key } = await trusted.fixtures.admin.createKey({
    type: 'personal',
    user: 'alice',
    allowedCidrs: ['203.0.113.0/24']
  })
  const via = (xff: string | undefined): Record<string, string> => ({ Authorization: `Bearer ${key.key}`, ...xff === undefined ? {} : { 'X-Forwarded-For': xff } })
  t.equal((await trusted.send('GET', '/api/v1/users', via('198.51.100.1, 203.0.113.7'))).status, 200, 'the client the proxy added (the last entry)')
  const refused = await trusted.send('GET', '/api/v1/users', via('203.0.113.7, 198.51.100.1'))
  t.equal(refused.status, 403, 'an earlier entry is the client\'s own claim')
  t.equal((await trusted.logOf(refused))?.reason, 'address_not_allowed')
  t.equal((await trusted.send('GET', '/api/v1/users', via(undefined))).status, 403, 'no X-Forwarded-For: the proxy itself')
  t.equal((await trusted.send('GET', '/api/v1/users', via('203.0.113.7'))).headers['ratelimit-remaining'], '3', 'two allowed so far, the refused ones uncounted')

  const untrusted = await startGateway(t, { redis: trusted.redis, prefix: trusted.prefix, seed: false })
  t.equal((await untrusted.send('GET', '/api/v1/users', via('203.0.113.7'))).status, 403, 'without trusted_proxies, a client\'s X-Forwarded-For is never its address')
})

t.test('through the authorizer: the client the trusted peer reports', async (t) => {
  const gw = await startGateway(t, { yaml: 'authz_listen: "127.0.0.1:0"\n' + LIMITS })
  const { result: key } = await gw.fixtures.admin.createKey({
    type: 'bot',
    role: 'reader',
    org: 'acme',
    allowedCidrs: ['2001:db8::/32', '192.0.2.0/24']
  })
  const ask = async (client: string): Promise<Awaited<ReturnType<typeof gw.authz>>> =>
    await gw.authz('GET', '/', { Authorization: `Bearer ${key.key}`, 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': '/api/v1/users', 'X-Forwarded-For': client })
  const ok = await ask('2001:db8::7')
  t.equal(ok.status, 200, 'an allowed IPv6 client')
  t.equal(ok.headers['ratelimit-remaining'], '4')
  t.equal((await ask('192.0.2.9')).status, 200, 'an allowed IPv4 client')
  const refused = await ask('198.51.100.3')
  t.equal(refused.status, 403, 'another client')
  t.equal((await gw.logOf(refused))?.reason, 'address_not_allowed')
  t.equal((await ask('192.0.2.9')).headers['ratelimit-remaining'], '2', 'the refused request counted nothing')
})
