/**
 * An admin change's event commits with the change (docs/webhooks.md "The guarantee"):
 * a real `keygate serve` (dist/) answers a key's creation through the admin API and is
 * SIGKILLed the moment the answer arrives, before its dispatcher's next round; a second
 * instance, started after it died, delivers the event to a real receiver, once, signed,
 * its `webhook-id` the one derived from the change's audit entry (the event is that
 * entry, not something queued after the commit). Real Redis, real sockets.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { auditEventId } from '../../../src/webhooks/audit-events.js'
import { Fixtures } from '../../helpers/fixtures.js'
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js'
import { startPlainUpstream } from '../../helpers/load.js'
import { send } from '../../helpers/raw-http.js'
import { startPrivateRedis, uniquePrefix } from '../../helpers/redis.js'
import { until } from '../../helpers/wait.js'
import { startReceiver } from '../../helpers/webhook-receiver.js'

t.setTimeout(180_000)

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

function gone (pid: number | undefined): boolean {
  try {
    process.kill(pid as number, 0)
    return false
  } catch {
    return true
  }
}

t.test('a change answered by an instance SIGKILLed at once is delivered by another instance', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const prefix = uniquePrefix()
  const fx = new Fixtures(client, prefix)
  await fx.standardWorld()
  await fx.role('kgadmin', ['keygate:admin'])
  await fx.user('ada', 'acme', 'kgadmin')
  const admin = (await fx.personalKey('ada')).key
  const upstream = await startPlainUpstream()
  t.teardown(async () => { await upstream.close() })
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const start = async (name: string, pollMs: number): Promise<GatewayProcess> => await startGatewayProcess(t, {
    name,
    redisUrl: redis.url,
    prefix,
    upstreamUrl: upstream.url,
    extra: { webhooks: { allow_private_targets: true, poll_ms: pollMs, retry: { base_delay_ms: 100, max_delay_ms: 400 } } }
  })
  const api = async (gw: GatewayProcess, path: string, body: unknown): Promise<{ status: number, json: any }> => {
    const res = await send(gw.adminPort, 'POST', `/admin/v1${path}`,
      { Authorization: `Bearer ${admin}`, 'Content-Type': 'application/json' }, JSON.stringify(body))
    return { status: res.status, json: res.body === '' ? undefined : JSON.parse(res.body) }
  }

  // the first instance's dispatcher runs its first round at the start, then not for a minute
  const first = await start('first', 60_000)
  const hook = await api(first, '/webhooks', { url: receiver.url, events: ['key.created'] })
  t.equal(hook.status, 201)
  receiver.secret = hook.json.secret
  const created = await api(first, '/keys', { type: 'bot', role: 'reader', org: 'acme', name: 'before the crash' })
  process.kill(first.pid as number, 'SIGKILL')
  t.equal(created.status, 201, 'the creation was answered')
  await until(() => gone(first.pid), 10_000, 'the first instance is gone')
  t.equal(receiver.received.length, 0, 'nothing was delivered before the crash')

  const second = await start('second', 50)
  await until(() => receiver.received.length >= 1, 20_000, `the second instance delivers (${second.stderr()})`)
  await sleep(500) // time for a duplicate to show up
  t.equal(receiver.received.length, 1, 'delivered once')
  // a dispatcher that starts while its connection is still connecting waits for it: no outage is reported
  t.ok(second.lines().length > 0, 'the log was read')
  t.same(second.lines().filter((l) => String(l['msg']).startsWith('webhooks: a step failed')), [],
    'no webhook step failed at the start, with Redis up')
  const got = receiver.received[0]
  t.equal(got?.verified, true, 'signed with the endpoint\'s secret (standardwebhooks)')
  const body = JSON.parse(got?.body ?? '{}')
  t.match(body, {
    type: 'key.created',
    data: { key_id: created.json.id, org: 'acme', key_type: 'bot', role: 'reader', name: 'before the crash' }
  })
  const entries = await client.xrange(fx.keys.audit, '-', '+')
  const entry = entries.find(([, f]) => f.includes('key.create') && f.includes(`key:${created.json.id as string}`))
  t.ok(entry, 'the creation\'s audit entry')
  t.equal(got?.id, auditEventId(fx.keys.audit, entry?.[0] ?? ''), 'the event is the audit entry: its webhook-id derives from it')
  const hash = await client.hget(fx.keys.key(created.json.id), 'hash')
  const key = String(created.json.key)
  t.ok(typeof hash === 'string' && hash.length > 10, 'the hash grepped for is real')
  t.notOk(got?.body.includes(key) || got?.body.includes(key.slice(-20)) || got?.body.includes(hash as string),
    'no key, secret or hash in the payload')
})
