/**
 * A Redis outage, said plainly in the log (docs/operating.md; src/registry/outage-log.ts):
 * a real redis-server is killed and started again on its port. One `error` line when it stops
 * answering, with its URL and the password redacted; one when the stale window ends and
 * requests get 503; one `info` line on recovery. The usage writer warns once per outage,
 * without the client library's internals, and says when counts are written again.
 */
import t from 'tap'
import { startGateway, type LogLine } from '../../helpers/gateway.js'
import { asTestRedis, serverArgs, startRedisNode } from '../../helpers/redis-node.js'
import { until } from '../../helpers/wait.js'

const PASSWORD = 's3cret-pw-for-the-log'
const node = await startRedisNode({ argv: serverArgs(['--user', 'kg', 'on', `>${PASSWORD}`, '~*', '&*', '+@all']) })
t.teardown(() => node.stop())
const url = `redis://kg:${PASSWORD}@127.0.0.1:${node.port}`
const redis = { ...asTestRedis(node), url }

const gw = await startGateway(t, {
  redis,
  yaml: 'cache: { stale_if_error_s: 2 }\nusage: { flush_ms: 100 }'
})
const alice = await gw.fixtures.personalKey('alice')

const withMsg = (re: RegExp): LogLine[] => gw.logs.filter((l) => typeof l.msg === 'string' && re.test(l.msg))
const unreachable = (): LogLine[] => withMsg(/^redis: unreachable/)
const staleEnded = (): LogLine[] => withMsg(/stale window has ended/)
const recovered = (): LogLine[] => withMsg(/^redis: reachable again/)
const usageFailed = (): LogLine[] => withMsg(/^usage: counts cannot be written/)
const usageBack = (): LogLine[] => withMsg(/^usage: counts are written again/)

t.test('an outage: one line when Redis goes, one when the stale window ends, one when it is back', async (t) => {
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 200, 'a cached key, while Redis answers')
  t.same([unreachable().length, staleEnded().length, recovered().length], [0, 0, 0], 'nothing said before')

  node.kill('SIGKILL')
  await until(() => unreachable().length > 0, 5000, 'the unreachable line')
  const down = unreachable()[0]
  t.equal(down?.level, 50, 'an error line')
  t.equal(down?.redis, `redis://kg:***@127.0.0.1:${node.port}`, 'the URL, its password redacted')
  t.equal(down?.stale_if_error_s, 2, 'the stale window it starts')

  // requests counted while Redis is gone: the usage writer fails every 100 ms
  for (let i = 0; i < 3; i++) await gw.get('/api/v1/users', alice.key)
  await until(() => staleEnded().length > 0, 6000, 'the stale-window line')
  const stale = staleEnded()[0]
  t.equal(stale?.level, 50, 'an error line')
  t.match(stale?.msg, /503/, 'it says what clients now get')
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 503, 'past the window: 503')
  for (let i = 0; i < 3; i++) await gw.get('/api/v1/users', alice.key)
  await new Promise((resolve) => setTimeout(resolve, 500))

  t.equal(unreachable().length, 1, 'one unreachable line for the whole outage')
  t.equal(staleEnded().length, 1, 'one stale-window line')
  const usage = usageFailed()
  t.equal(usage.length, 1, 'one usage warning for the whole outage, not one a flush')
  t.equal(usage[0]?.level, 40, 'a warning')
  t.equal(usage[0]?.cause, 'Redis unreachable', 'its cause in words')
  t.equal(usage[0]?.err, undefined, 'no error object (no stack)')
  t.notMatch(JSON.stringify(usage[0]), /stack|enableOfflineQueue|Stream isn't writeable|ioredis|Connection is closed/,
    'no client library internals')

  await node.restart()
  await until(() => recovered().length > 0, 10_000, 'the recovery line')
  const back = recovered()[0]
  t.equal(back?.level, 30, 'an info line')
  t.ok(typeof back?.unreachable_s === 'number' && back.unreachable_s >= 2, `how long it was gone (${String(back?.unreachable_s)} s)`)
  // (a restarted server without persistence has lost the registry: the key is written again)
  await gw.fixtures.standardWorld()
  const again = await gw.fixtures.personalKey('alice')
  await until(async () => (await gw.get('/api/v1/users', again.key)).status === 200, 5000, 'requests allowed again')
  await until(() => usageBack().length > 0, 5000, 'the usage recovery line')
  t.equal(unreachable().length, 1, 'still one unreachable line')
  t.equal(recovered().length, 1, 'one recovery line')

  t.notOk(gw.rawLogs.join('\n').includes(PASSWORD), 'the password is in no line')
})

t.test('a graceful stop is no outage', async (t) => {
  const before = unreachable().length
  await gw.app.close()
  t.equal(unreachable().length, before, 'closing the connection logs no unreachable line')
})
