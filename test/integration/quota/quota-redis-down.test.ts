/**
 * Quotas with Redis unreachable (docs/quotas.md): `quota.on_error: deny` (the default) answers
 * 503 for a metered key; `allow` lets it on unmetered, counted. A key without an allowance
 * needs no Redis, so a cached one still passes.
 */
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'
import { startPrivateRedis } from '../../helpers/redis.js'

for (const onError of ['deny', 'allow'] as const) {
  t.test(`quota.on_error ${onError}, Redis killed`, async (t) => {
    const redis = await startPrivateRedis()
    t.teardown(async () => { await redis.stop() })
    const yaml = `cache: { stale_if_error_s: 30 }\n${onError === 'allow' ? 'quota: { on_error: allow }\n' : ''}`
    const gw = await startGateway(t, { redis, yaml })
    const metered = await gw.fixtures.botKey('reader', 'acme')
    const plain = await gw.fixtures.botKey('reader', 'acme')
    await gw.client.hset(gw.fixtures.keys.key(metered.id), 'quota', '100/month')
    t.equal((await gw.get('/api/v1/users', metered.key)).headers['ratelimit-policy'], '"key-quota";q=100;w=' +
      String(monthSeconds()), 'control: metered, Redis up')
    t.equal((await gw.get('/api/v1/users', plain.key)).status, 200, 'control: unmetered')

    redis.kill('SIGKILL')
    const res = await gw.get('/api/v1/users', metered.key)
    t.equal(res.headers.ratelimit, undefined, 'no allowance could be read: no header')
    if (onError === 'deny') {
      t.equal(res.status, 503, 'deny: 503')
      t.same(res.json(), { error: { code: 'service_unavailable', message: 'Authentication service unavailable', status: 503 } })
      t.equal((await gw.logOf(res))?.reason, 'quota_unavailable')
    } else {
      t.equal(res.status, 200, 'allow: on, unmetered')
    }
    t.equal((await gw.get('/api/v1/users', plain.key)).status, 200, 'a cached key without an allowance needs no Redis')
    const metrics = (await gw.admin('GET', '/metrics')).body
    t.match(metrics, new RegExp(`^keygate_quota_decisions_total\\{outcome="error_${onError === 'deny' ? 'denied' : 'allowed'}"\\} 1$`, 'm'), 'counted')
  })
}

function monthSeconds (): number {
  const now = new Date()
  return (Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) - Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)) / 1000
}
