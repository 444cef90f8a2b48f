/**
 * `keygate health` (the image's HEALTHCHECK) asks the admin listener the
 * configuration names: exit 0 on 200, 1 when it answers otherwise or not at all.
 */
import t from 'tap'
import { probeAddress } from '../../../src/cli/health.js'
import { runCli } from '../../helpers/cli.js'
import { startGateway } from '../../helpers/gateway.js'
import { freePort } from '../../helpers/net.js'
import { startPrivateRedis } from '../../helpers/redis.js'

t.test('exit 0 while the admin listener answers, 1 when /readyz is not ready or nothing listens', async (t) => {
  // (a Redis of its own: the test stops it)
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const gw = await startGateway(t, { redis })
  const env = { KEYGATE_ADMIN_LISTEN: `127.0.0.1:${gw.adminPort}` }
  const healthy = await runCli(['health'], env)
  t.equal(healthy.code, 0, '/healthz: 200')
  t.match(healthy.stdout, /^ok: \/healthz at 127\.0\.0\.1:\d+ answered 200\n$/, 'and says so')
  t.equal((await runCli(['health', '--ready'], env)).code, 0, '/readyz: 200 while Redis answers')

  const closed = await runCli(['health', '--timeout', '1s'], { KEYGATE_ADMIN_LISTEN: `127.0.0.1:${await freePort()}` })
  t.equal(closed.code, 1, 'nothing listening: 1')
  t.match(closed.stderr, /\/healthz at 127\.0\.0\.1:\d+ did not answer/)

  await redis.stop()
  let ready = await runCli(['health', '--ready'], env)
  for (let i = 0; i < 20 && ready.code === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500))
    ready = await runCli(['health', '--ready'], env)
  }
  t.equal(ready.code, 1, 'Redis gone: /readyz answers 503, exit 1')
  t.match(ready.stderr, /\/readyz at .* answered 503/)
  t.equal((await runCli(['health'], env)).code, 0, 'the process itself is still alive')
})

t.test('a wildcard listen address is asked on loopback', async (t) => {
  t.same(probeAddress('0.0.0.0:8081'), { host: '127.0.0.1', port: 8081 })
  t.same(probeAddress('[::]:8081'), { host: '::1', port: 8081 })
  t.same(probeAddress('[::1]:9000'), { host: '::1', port: 9000 })
  t.same(probeAddress('10.0.0.5:8081'), { host: '10.0.0.5', port: 8081 })
})
