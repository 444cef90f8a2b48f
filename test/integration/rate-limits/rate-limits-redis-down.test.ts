/**
 * Rate limits with Redis unreachable (docs/rate-limits.md): `rate_limits.on_error: allow` (the default)
 * lets a limited request go on, counted in a metric; `deny` answers 503. Either way
 * authentication itself still fails closed (a key that is not cached gets 503), and
 * a key under no limit needs no Redis at all. Both with Redis killed (the connection
 * drops) and hung (SIGSTOP: bounded by redis.command_timeout_ms).
 */
import t from 'tap'
import type { Test } from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { startPrivateRedis } from '../../helpers/redis.js'

const SIGNALS = ['SIGKILL', 'SIGSTOP'] as const

async function gatewayWith (t: Test, onError: 'allow' | 'deny'): Promise<TestGateway> {
  const redis = await startPrivateRedis()
  t.teardown(async () => {
    redis.kill('SIGCONT')
    await redis.stop()
  })
  return await startGateway(t, { redis, yaml: `rate_limits: { on_error: ${onError} }\ncache: { stale_if_error_s: 30 }\n` })
}

for (const onError of ['allow', 'deny'] as const) {
  for (const signal of SIGNALS) {
    t.test(`on_error: ${onError}, Redis ${signal === 'SIGKILL' ? 'killed' : 'hung'}`, async (t) => {
      const gw = await gatewayWith(t, onError)
      const limited = await gw.fixtures.botKey('reader', 'acme')
      const plain = await gw.fixtures.botKey('reader', 'acme')
      const uncached = await gw.fixtures.botKey('reader', 'acme')
      await gw.client.hset(gw.fixtures.keys.key(limited.id), 'rate_limit', '100/1m')
      t.equal((await gw.get('/api/v1/users', limited.key)).headers['ratelimit-limit'], '100', 'control: limited, Redis up')
      t.equal((await gw.get('/api/v1/users', plain.key)).status, 200, 'control: no limit')

      gw.redis.kill(signal)
      const start = Date.now()
      const res = await gw.get('/api/v1/users', limited.key)
      const ms = Date.now() - start
      t.ok(ms < 1200, `answered in ${ms} ms (bounded by redis.command_timeout_ms, 500 ms)`)
      for (const h of ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset']) t.equal(res.headers[h], undefined, `no ${h}: no limit could be read`)
      if (onError === 'allow') {
        t.equal(res.status, 200, 'allow: the limited request goes on')
        t.equal((await gw.logOf(res))?.reason, 'allowed')
      } else {
        t.equal(res.status, 503, 'deny: 503')
        t.same(res.json(), { error: { code: 'service_unavailable', message: 'Authentication service unavailable', status: 503 } })
        t.equal((await gw.logOf(res))?.reason, 'rate_limit_unavailable')
      }
      t.equal((await gw.get('/api/v1/users', plain.key)).status, 200, 'a cached key under no limit needs no Redis')
      t.equal((await gw.get('/api/v1/users', uncached.key)).status, 503, 'authentication still fails closed: a key not cached gets 503')
      const metrics = (await gw.admin('GET', '/metrics')).body
      t.match(metrics, new RegExp(`^keygate_rate_limit_errors_total\\{on_error="${onError}"\\} 1$`, 'm'), 'counted in keygate_rate_limit_errors_total')
    })
  }
}
