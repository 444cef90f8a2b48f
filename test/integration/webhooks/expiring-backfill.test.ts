/**
 * Keys from before the index by expiry (docs/webhooks.md "Events"): key records written
 * as redis-cli writes them (a bare HSET, no `key-expiry` entry) get their `key.expiring`
 * once an endpoint exists, through the once-per-deployment backfill, with two instances
 * sharing the registry; a key outside the window is indexed and not told, a revoked or
 * expired one neither. Before any endpoint exists the dispatchers write nothing and run
 * no script, admin changes or not. Real Redis (the test's own, for its command counts),
 * two gateways, a real receiver verifying signatures.
 */
import t from 'tap'
import { adminActions, adminWing } from '../../../src/admin/actions/index.js'
import { FULL_ADMIN } from '../../../src/admin/model/principal.js'
import { generateKey } from '../../../src/registry/key-format.js'
import { eventually, startGateway } from '../../helpers/gateway.js'
import { scriptCalls, startPrivateRedis } from '../../helpers/redis.js'
import { startReceiver } from '../../helpers/webhook-receiver.js'

const YAML = `
webhooks: { allow_private_targets: true, poll_ms: 30, timeout_ms: 2000, retry: { base_delay_ms: 100, max_delay_ms: 400 } }
`
const DAY = 86_400_000
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

t.test('keys written with HSET alone get their key.expiring once an endpoint exists; nothing before', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const a = await startGateway(t, { yaml: YAML, redis })
  const b = await startGateway(t, { yaml: YAML, redis, prefix: a.prefix, seed: false })
  const keys = a.fixtures.keys
  const now = Date.now()
  const hsetKey = async (name: string, expiresInMs: number, status = 'active'): Promise<string> => {
    const { id, hash } = generateKey('kg_')
    await a.client.hset(keys.key(id), {
      type: 'bot',
      hash,
      org: 'acme',
      role: 'reader',
      name,
      status,
      created_at: new Date(now).toISOString(),
      created_by: 'cli:test',
      expires_at: new Date(now + expiresInMs).toISOString()
    })
    return id
  }
  const soon = await hsetKey('soon', 3 * DAY)
  const later = await hsetKey('later', 30 * DAY)
  const revoked = await hsetKey('revoked', 2 * DAY, 'revoked')
  const expired = await hsetKey('expired', -DAY)
  t.same(await a.client.zrange(keys.keyExpiry, 0, -1), [], 'none of them in the index')

  // no endpoint: an admin change, rounds of both dispatchers, and nothing written or run for webhooks
  const made = (await a.fixtures.admin.createKey({ type: 'bot', role: 'reader', org: 'acme', expiresInMs: 2 * DAY })).result
  const names = async (): Promise<string[]> => (await a.client.keys(`${a.prefix}*`)).sort()
  const before = { names: await names(), scripts: await scriptCalls(a.client) }
  for (let i = 0; i < 3; i++) for (const gw of [a, b]) await gw.app.webhooks.dispatcher?.runOnce()
  await sleep(200) // (and their own rounds, every 30 ms)
  t.same(await names(), before.names, 'no endpoint: the dispatchers write nothing')
  t.equal(await scriptCalls(a.client), before.scripts, 'and run no script')
  t.equal(await a.client.exists(keys.keyExpiryBackfill, keys.webhookCursor), 0, 'no backfill, no cursor')

  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const actions = adminActions(adminWing(a.config, a.app.redis), FULL_ADMIN, 'cli:test')
  const endpoint = await actions.addWebhook({ url: receiver.url, events: ['key.expiring'] })
  receiver.secret = endpoint.secret

  t.ok(await eventually(async () => receiver.received.length >= 2, 10_000) >= 0, 'the events arrive')
  await sleep(500) // time for a duplicate to show up
  const told = receiver.received.map((r) => JSON.parse(r.body) as { type: string, data: { key_id: string } })
  t.same(told.map((e) => e.data.key_id).sort(), [soon, made.id].sort(),
    'the HSET key in the window and the key created through keygate, each once')
  t.ok(told.every((e) => e.type === 'key.expiring'))
  t.ok(receiver.received.every((r) => r.verified === true), 'signed')
  t.equal(await a.client.get(keys.keyExpiryBackfill), 'done', 'the backfill is done, once for the deployment')
  t.ok(await a.client.zscore(keys.keyExpiry, later) !== null, 'the key outside the window is indexed, for later')
  for (const id of [revoked, expired]) t.equal(await a.client.zscore(keys.keyExpiry, id), null, `${id}: not indexed`)
  t.notOk(receiver.received.some((r) => r.body.includes(revoked) || r.body.includes(expired)), 'the revoked and the expired are not told')
})
