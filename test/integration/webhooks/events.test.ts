/**
 * Webhook events beyond the key's own (docs/webhooks.md), end to end: real Redis, a real
 * gateway, a real receiver verifying signatures with `standardwebhooks`. quota.threshold
 * at 80, 90 and 100 % once each, from requests through the gateway; user.deactivated and
 * registry.applied with their payloads (no key, secret or hash); an org admin's endpoints
 * through the admin API are its org's only.
 */
import t, { type Test } from 'tap'
import { adminActions, adminWing } from '../../../src/admin/actions/index.js'
import { registryYaml } from '../../../src/admin/as-code/registry-export.js'
import { parseRegistryFile } from '../../../src/admin/as-code/registry-file.js'
import { FULL_ADMIN } from '../../../src/admin/model/principal.js'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { send } from '../../helpers/raw-http.js'
import { startReceiver, type Receiver } from '../../helpers/webhook-receiver.js'

const TOKEN = 'webhooks-events-admin-token-0123456789'
const YAML = `
webhooks: { allow_private_targets: true, poll_ms: 30, timeout_ms: 2000, retry: { base_delay_ms: 100, max_delay_ms: 400 } }
`

async function gateway (t: Test): Promise<TestGateway> {
  return await startGateway(t, { yaml: YAML, env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
}

function actionsOf (gw: TestGateway): ReturnType<typeof adminActions> {
  return adminActions(adminWing(gw.config, gw.app.redis), FULL_ADMIN, 'cli:test')
}

async function api (
  gw: TestGateway, method: string, target: string, body?: unknown, token = TOKEN
): Promise<{ status: number, json: any }> {
  const headers: Record<string, string> = { Authorization: `Bearer ${token}` }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  const res = await send(gw.adminPort, method, `/admin/v1${target}`, headers, body === undefined ? undefined : JSON.stringify(body))
  return { status: res.status, json: res.body === '' ? undefined : JSON.parse(res.body) }
}

async function register (gw: TestGateway, r: Receiver, events: string[]): Promise<string> {
  const res = await api(gw, 'POST', '/webhooks', { url: r.url, events })
  if (res.status !== 201) throw new Error(`webhook not added: ${res.status} ${JSON.stringify(res.json)}`)
  r.secret = res.json.secret
  return res.json.id
}

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }
const bodies = (r: Receiver): any[] => r.received.map((x) => JSON.parse(x.body))

t.test('quota.threshold: a quota of 10/day, 14 requests through the gateway: 80, 90 and 100 % once each', async (t) => {
  const gw = await gateway(t)
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  await register(gw, receiver, ['quota.threshold'])
  const bot = await gw.fixtures.botKey('reader', 'acme')
  t.match(await actionsOf(gw).meterKey(bot.id, { quota: '10/day' }), { changed: true })

  const statuses: number[] = []
  for (let i = 0; i < 14; i++) statuses.push((await gw.get('/api/v1/users', bot.key)).status)
  t.same(statuses, [...Array(10).fill(200), ...Array(4).fill(429)], '10 allowed, then refused')
  t.ok(await eventually(async () => receiver.received.length >= 3, 5000) >= 0, 'three thresholds arrive')
  await sleep(500) // time for a duplicate to show up
  t.equal(receiver.received.length, 3, 'each threshold once, the refused requests add none')
  t.ok(receiver.received.every((r) => r.verified === true), 'signed')
  const got = bodies(receiver).sort((a, b) => a.data.percent - b.data.percent)
  t.same(got.map((b) => b.data.percent), [80, 90, 100])
  for (const b of got) {
    t.match(b, { type: 'quota.threshold', data: { level: 'key', key_id: bot.id, org: 'acme', limit: 10 } })
    t.equal(b.data.used, b.data.percent / 10, `used at ${b.data.percent as number} %`)
    t.ok(Date.parse(b.data.period_start) <= Date.now() && Date.parse(b.data.period_end) > Date.now(), 'the period holds now')
  }
  const all = receiver.received.map((r) => r.body).join('\n')
  const hash = await gw.client.hget(`${gw.prefix}key:${bot.id}`, 'hash')
  t.ok(typeof hash === 'string' && hash.length > 10, 'the hash grepped for is real')
  t.notOk(all.includes(bot.key) || all.includes(hash as string), 'no key or hash in a payload')
})

t.test('user.deactivated and registry.applied: their payloads, without a key, secret or hash', async (t) => {
  const gw = await gateway(t)
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  await register(gw, receiver, ['user.deactivated', 'registry.applied'])  // (not key.created)
  const f = gw.fixtures
  const actions = actionsOf(gw)
  await f.role('maker', ['users:read', 'keygate:keys:self'])
  await f.user('dora', 'acme', 'maker')
  const personal = await f.personalKey('dora')
  const made = (await actions.createKey({ type: 'bot', role: 'reader', org: 'acme', name: 'plain' })).result

  const change = await actions.setUserStatus('dora', 'deactivated', { revokeCreatedKeys: true })
  t.equal(change.changed, true)
  t.ok(await eventually(async () => receiver.received.length >= 1, 5000) >= 0, 'user.deactivated arrives')
  const deactivated = bodies(receiver)[0]
  t.same(Object.keys(deactivated).sort(), ['data', 'timestamp', 'type'])
  t.match(deactivated, { type: 'user.deactivated', data: { user_id: 'dora', org: 'acme' } })
  t.same(deactivated.data.revoked_keys, [], 'no BOT key of hers to revoke with her')

  const yaml = registryYaml(await actions.exportRegistry())
  const file = parseRegistryFile(yaml.replace(/(\n {2}maker:\n)/, '\n  auditor:\n    permissions: [users:read]$1'))
  t.ok(file.records.role.has('auditor'), 'a file with one role more')
  t.match(await actions.applyRegistry(file, { prune: false }), { ok: true })
  t.ok(await eventually(async () => receiver.received.length >= 2, 5000) >= 0, 'registry.applied arrives')
  const applied = bodies(receiver)[1]
  t.match(applied, { type: 'registry.applied' })
  t.ok(Array.isArray(applied.data.created) && Array.isArray(applied.data.changed) && Array.isArray(applied.data.deleted))
  t.ok(JSON.stringify(applied.data.created).includes('auditor'), 'the role created is named')
  t.ok(receiver.received.every((r) => r.verified === true), 'signed')

  const all = receiver.received.map((r) => r.body).join('\n')
  for (const k of [personal, { id: made.id, key: made.key }]) {
    const hash = await gw.client.hget(`${gw.prefix}key:${k.id}`, 'hash')
    t.ok(typeof hash === 'string' && hash.length > 10, 'the hash grepped for is real')
    const secret = k.key.slice(k.key.lastIndexOf('_') + 1)
    t.notOk(all.includes(k.key) || all.includes(secret) || all.includes(hash as string), `no key, secret or hash of ${k.id}`)
  }
  t.notMatch(all, /whsec_/, 'no webhook secret')
})

t.test('an org admin lists and adds only its org\'s endpoints through the admin API', async (t) => {
  const gw = await gateway(t)
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*'])
  await f.user('oscar', 'acme', 'orgadmin')
  await f.user('gina', 'globex', 'orgadmin')
  const oscar = (await f.personalKey('oscar')).key
  const gina = (await f.personalKey('gina')).key
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())

  const mine = await api(gw, 'POST', '/webhooks', { url: receiver.url, events: ['key.created'] }, oscar)
  t.equal(mine.status, 201)
  t.equal(mine.json.org, 'acme', 'an org admin\'s endpoint is its org\'s')
  const other = await api(gw, 'POST', '/webhooks', { url: receiver.url, events: ['key.created'], org: 'globex' }, oscar)
  t.equal(other.status, 403, 'not another org\'s')
  const theirs = await api(gw, 'POST', '/webhooks', { url: receiver.url, events: ['key.created'] }, gina)
  t.equal(theirs.status, 201)
  const global = await api(gw, 'POST', '/webhooks', { url: receiver.url, events: ['key.created'] })
  t.equal(global.status, 201)

  const listed = await api(gw, 'GET', '/webhooks', undefined, oscar)
  t.equal(listed.status, 200)
  t.same(listed.json.webhooks.map((w: any) => w.id), [mine.json.id], 'only acme\'s')
  t.equal((await api(gw, 'GET', '/webhooks')).json.webhooks.length, 3, 'an admin sees all three')
  t.equal((await api(gw, 'GET', `/webhooks/${theirs.json.id as string}`, undefined, oscar)).status, 404, 'another org\'s is 404')
  t.equal((await api(gw, 'DELETE', `/webhooks/${theirs.json.id as string}`, undefined, oscar)).status, 404)
  t.equal((await api(gw, 'GET', `/webhooks/${theirs.json.id as string}/deliveries`, undefined, oscar)).status, 404)
  t.equal((await api(gw, 'POST', `/webhooks/${global.json.id as string}/test`, undefined, oscar)).status, 404)
  t.equal((await api(gw, 'DELETE', `/webhooks/${mine.json.id as string}`, undefined, oscar)).status, 204)
  t.equal((await api(gw, 'GET', '/webhooks')).json.webhooks.length, 2, 'its own removed')
})
