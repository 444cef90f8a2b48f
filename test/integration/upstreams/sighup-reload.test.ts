/**
 * `kill -HUP` on a running `keygate serve` re-reads the upstream's `ca_file`: a CA
 * replaced in its file verifies the upstream's certificate from then on, without a
 * restart (docs/configuration.md, "Start and stop"). The process as a deployment runs
 * it (dist/, built before tap runs).
 */
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import t from 'tap'
import { Fixtures } from '../../helpers/fixtures.js'
import { startGatewayProcess } from '../../helpers/gateway-process.js'
import { send } from '../../helpers/raw-http.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'
import { makeTestCa, SERVER_NAME, startHttpsUpstream } from '../../helpers/test-ca.js'
import { until } from '../../helpers/wait.js'

t.test('SIGHUP: the upstream CA replaced in ca_file is used without a restart', async (t) => {
  const ca = makeTestCa(t)
  const url = await startHttpsUpstream(t, ca, false)
  const file = join(ca.dir, 'upstream-ca.pem')
  copyFileSync(ca.wrongCaFile, file)

  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = uniquePrefix()
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const fixtures = new Fixtures(client, prefix)
  await fixtures.standardWorld()
  const key = (await fixtures.personalKey('alice')).key

  const gw = await startGatewayProcess(t, {
    name: 'sighup',
    redisUrl: redis.url,
    prefix,
    upstreamUrl: url,
    extra: {
      upstreams: { core: { url, ca_file: file, servername: SERVER_NAME, timeout_ms: 5000, connect_timeout_ms: 1000 } }
    }
  })
  const get = async (): Promise<number> =>
    (await send(gw.port, 'GET', '/api/v1/users', { Authorization: `Bearer ${key}` })).status

  t.equal(await get(), 502, 'the certificate is refused with the CA first in the file')
  copyFileSync(ca.caFile, file)
  t.equal(await get(), 502, 'a changed file alone changes nothing')
  process.kill(gw.pid as number, 'SIGHUP')
  const reread = (): boolean => gw.lines().some((l) => l.msg === 'SIGHUP: upstream TLS files re-read')
  await until(reread, 10_000, 'the re-read logged', 20)
  t.equal(await get(), 200, 'verified with the CA now in the file')
  t.equal(gw.stderr(), '', 'nothing on stderr')
})
