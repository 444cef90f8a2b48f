/**
 * The audit trail shipped as OpenTelemetry logs (docs/audit-export.md) to an OTLP/HTTP
 * receiver in the test, as a Collector would take them: every entry once and in order
 * across a restart of keygate (kill -TERM, entries written while it is down, started
 * again), across a receiver that refuses for a while, and with two instances sharing
 * the work through the lease (one ships). Real `keygate serve` processes (dist/), a
 * real Redis, no key or secret in anything exported.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { hashSecret } from '../../../src/registry/key-format.js'
import { Fixtures, type KeyFixture } from '../../helpers/fixtures.js'
import { startGatewayProcess } from '../../helpers/gateway-process.js'
import { startPlainUpstream } from '../../helpers/load.js'
import { startOtlpReceiver } from '../../helpers/otlp-receiver.js'
import { send } from '../../helpers/raw-http.js'
import { startPrivateRedis, uniquePrefix } from '../../helpers/redis.js'
import { until } from '../../helpers/wait.js'

t.test('every audit entry once and in order, across a restart, a refusing receiver and two instances', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const prefix = uniquePrefix()
  const fx = new Fixtures(client, prefix)
  await fx.standardWorld()
  const upstream = await startPlainUpstream()
  t.teardown(async () => { await upstream.close() })
  const receiver = await startOtlpReceiver()
  t.teardown(async () => { await receiver.close() })
  const keys: KeyFixture[] = []
  const write = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) keys.push(await fx.personalKey('alice', { name: `export ${keys.length}` }))
  }
  const ids = async (): Promise<string[]> => (await client.xrange(fx.keys.audit, '-', '+')).map(([id]) => id)
  const shipped = (): string[] => receiver.logs.map((l) => String(l.attributes['keygate.audit.id']))
  const start = async (name: string) => await startGatewayProcess(t, {
    name,
    redisUrl: redis.url,
    prefix,
    upstreamUrl: upstream.url,
    extra: { audit: { otlp_endpoint: receiver.logsUrl, export_interval_ms: 100, export_batch: 7 } }
  })

  // 1. what the trail holds before the start, and what is written while it runs
  await write(10)
  const first = await start('first')
  await write(10)
  await until(async () => shipped().length >= (await ids()).length, 20_000, 'the first instance ships the trail')
  t.same(shipped(), await ids(), 'every entry so far, once, oldest first')

  // 2. kill -TERM: a graceful stop; entries written while no keygate runs
  t.equal(await first.stop(), 0, 'the first instance stops cleanly on SIGTERM')
  const before = shipped().length
  await write(15)
  t.equal(shipped().length, before, 'nothing shipped while keygate is down')

  // 3. the receiver refuses for a while: nothing is lost, nothing skipped
  receiver.refuse = true
  const second = await start('second')
  const third = await start('third')
  await until(() => receiver.refused >= 2, 20_000, 'the restarted gateway tries to ship')
  await write(5)
  receiver.refuse = false
  await until(async () => shipped().length >= (await ids()).length, 30_000, 'the entries written while down shipped')
  await write(5)
  await until(async () => shipped().length >= (await ids()).length, 20_000, 'and those written after')
  const all = await ids()
  t.ok(all.length >= 45, 'the trail holds the world and 45 keys')
  t.same(shipped(), all, 'every entry exactly once, in order of its id, across the restart and the refusals')
  t.equal(await client.get(fx.keys.auditExportCursor), all[all.length - 1], 'the cursor is the last entry shipped')

  // one instance ships at a time: the other holds no lease
  const leaders = await Promise.all([second, third].map(async (g) => {
    const res = await send(g.adminPort, 'GET', '/metrics')
    return /^keygate_audit_export_leader 1$/m.test(res.body) ? 1 : 0
  }))
  t.equal(leaders.reduce<number>((a, b) => a + b, 0), 1, 'exactly one instance holds the export lease')
  const metrics = (await send((leaders[0] === 1 ? second : third).adminPort, 'GET', '/metrics')).body
  t.match(metrics, /^keygate_audit_export_lag_seconds 0$/m, 'caught up: no lag')
  t.match(metrics, /^keygate_audit_export_failures_total [1-9]/m, 'the refused exports are counted')

  // the records: OpenTelemetry logs with the entry's fields, never a key
  const created = receiver.logs.find((l) => l.attributes['keygate.audit.action'] === 'key.create')
  t.ok(created, 'a key creation was shipped')
  t.equal(created?.eventName, 'keygate.audit')
  t.equal(created?.severityText, 'INFO')
  t.equal(created?.scope, 'keygate.audit')
  t.equal(created?.resource['service.name'], 'keygate')
  t.match(created?.attributes['keygate.audit.actor'], /^cli:test$/)
  t.match(created?.attributes['keygate.audit.target'], /^key:/)
  t.ok(created !== undefined && created.timeNs > 0n, 'the entry\'s time')
  const bodies = Buffer.concat(receiver.bodies).toString('utf8')
  const secretOf = (k: KeyFixture): string => k.key.slice(k.key.indexOf(k.id) + k.id.length + 1).slice(0, 32)
  const leaked = keys.filter((k) => bodies.includes(k.key) || bodies.includes(secretOf(k)) ||
    bodies.includes(hashSecret(secretOf(k))))
  t.equal(keys.length, 45)
  t.same(leaked.map((k) => k.id), [], 'no key, secret or hash in anything exported')
})
