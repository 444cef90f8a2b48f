/**
 * Webhooks end to end (docs/webhooks.md): real Redis, two gateway instances, a real
 * receiver verifying signatures with `standardwebhooks`. Each event once across both
 * instances; a 500 retried; a receiver down gets the backlog; no key, secret or hash in
 * any payload; key.expiring once; deliveries listed with their outcome.
 */
import t, { type Test } from 'tap'
import { adminActions, adminWing } from '../../../src/admin/actions/index.js'
import { FULL_ADMIN } from '../../../src/admin/model/principal.js'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { send } from '../../helpers/raw-http.js'
import { startReceiver, type Receiver } from '../../helpers/webhook-receiver.js'

const TOKEN = 'webhooks-test-admin-token-0123456789'
const YAML = `
webhooks: { allow_private_targets: true, poll_ms: 30, timeout_ms: 2000, retry: { base_delay_ms: 100, max_delay_ms: 400 } }
`

async function gateway (t: Test, shared?: TestGateway): Promise<TestGateway> {
  return await startGateway(t, {
    yaml: YAML,
    env: { KEYGATE_ADMIN_TOKEN: TOKEN },
    ...shared === undefined ? {} : { redis: shared.redis, prefix: shared.prefix, seed: false }
  })
}

function actionsOf (gw: TestGateway): ReturnType<typeof adminActions> {
  return adminActions(adminWing(gw.config, gw.app.redis), FULL_ADMIN, 'cli:test')
}

async function api (gw: TestGateway, method: string, target: string, body?: unknown): Promise<{ status: number, json: any }> {
  const headers: Record<string, string> = { Authorization: `Bearer ${TOKEN}` }
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

t.test('two instances, one receiver: 200 key events, each delivered once, signed, without a key or hash', async (t) => {
  const a = await gateway(t)
  const b = await gateway(t, a)
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const hook = await register(a, receiver, ['key.created'])
  t.match(receiver.secret, /^whsec_/)
  // the secret is shown once: never in a listing
  t.notMatch(JSON.stringify((await api(a, 'GET', '/webhooks')).json), /whsec_/)

  const created: Array<{ id: string, key: string }> = []
  await Promise.all([a, b].map(async (gw) => {
    const actions = actionsOf(gw)
    for (let i = 0; i < 100; i++) {
      const { result } = await actions.createKey({ type: 'bot', role: 'reader', org: 'acme', name: `k${i}` })
      created.push({ id: result.id, key: result.key })
    }
  }))
  t.equal(created.length, 200)
  t.ok(await eventually(async () => receiver.received.length >= 200, 20_000) >= 0, 'every event arrived')
  await sleep(500) // time for a duplicate to show up
  t.equal(receiver.received.length, 200, 'no event twice')
  t.equal(new Set(receiver.received.map((r) => r.id)).size, 200, 'distinct webhook-ids')
  t.ok(receiver.received.every((r) => r.verified === true), 'every signature verifies with standardwebhooks')
  const ids = new Set(receiver.received.map((r) => (JSON.parse(r.body) as { data: { key_id: string } }).data.key_id))
  t.same([...ids].sort(), created.map((c) => c.id).sort(), 'one key.created per key')
  const first = JSON.parse(receiver.received[0]?.body ?? '{}')
  t.same(Object.keys(first).sort(), ['data', 'timestamp', 'type'])
  t.equal(first.type, 'key.created')

  const hashes = await Promise.all(created.map(async (c) => await a.client.hget(`${a.prefix}key:${c.id}`, 'hash')))
  const bodies = receiver.received.map((r) => r.body).join('\n')
  for (const [i, c] of created.entries()) {
    const secret = c.key.slice(c.key.lastIndexOf('_') + 1)
    if (bodies.includes(c.key) || bodies.includes(secret) || bodies.includes(hashes[i] as string)) {
      t.fail(`key ${c.id}'s key, secret or hash in a payload`)
    }
  }
  t.ok(hashes.every((h) => typeof h === 'string' && h.length > 10), 'the hashes grepped for are real')

  const listed = await api(a, 'GET', `/webhooks/${hook}/deliveries?limit=500`)
  t.equal(listed.status, 200)
  t.equal(listed.json.deliveries.length, 200)
  t.ok(listed.json.deliveries.every((d: any) => d.status === 'delivered' && d.last_status === 200 &&
    d.attempts === 1 && typeof d.latency_ms === 'number'), 'each delivered once, with its status and latency')
})

t.test('a receiver that answers 500 then 200 gets the retry; a delivery is sent again on request', async (t) => {
  const gw = await gateway(t)
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  receiver.answer = (_r, n) => ({ status: n === 1 ? 500 : 200 })
  const hook = await register(gw, receiver, ['key.revoked'])
  const { result } = await actionsOf(gw).createKey({ type: 'bot', role: 'reader', org: 'acme' })
  await actionsOf(gw).revokeKey(result.id)
  t.ok(await eventually(async () => receiver.received.length >= 2, 5000) >= 0)
  t.equal(receiver.received[0]?.id, receiver.received[1]?.id, 'the retry is the same message')
  t.equal(JSON.parse(receiver.received[1]?.body ?? '{}').data.key_id, result.id)
  let deliveries = (await api(gw, 'GET', `/webhooks/${hook}/deliveries`)).json.deliveries
  t.ok(await eventually(async () => {
    deliveries = (await api(gw, 'GET', `/webhooks/${hook}/deliveries`)).json.deliveries
    return deliveries[0]?.status === 'delivered'
  }, 3000) >= 0)
  t.match(deliveries[0], { status: 'delivered', attempts: 2, last_status: 200 })

  const again = await api(gw, 'POST', `/webhooks/${hook}/deliveries/${deliveries[0].id}/resend`)
  t.equal(again.status, 202)
  t.ok(await eventually(async () => receiver.received.length >= 3, 3000) >= 0, 'sent again')
  t.equal(receiver.received[2]?.verified, true)
})

t.test('a receiver down for a while gets the backlog when it returns', async (t) => {
  const gw = await gateway(t)
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const hook = await register(gw, receiver, ['key.created'])
  await receiver.close()
  for (let i = 0; i < 5; i++) await actionsOf(gw).createKey({ type: 'bot', role: 'reader', org: 'acme' })
  t.ok(await eventually(async () => {
    const d = (await api(gw, 'GET', `/webhooks/${hook}/deliveries`)).json.deliveries
    return d.length === 5 && d.every((x: any) => x.status === 'retrying' && x.attempts >= 2)
  }, 5000) >= 0, 'retried while the receiver is down')
  await receiver.reopen()
  t.ok(await eventually(async () => new Set(receiver.received.map((r) => r.id)).size === 5, 5000) >= 0, 'the backlog arrives')
  t.ok(receiver.received.every((r) => r.verified === true))
})

t.test('key.expiring: once, for the key whose expiry falls within the window', async (t) => {
  const gw = await gateway(t)
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  await register(gw, receiver, ['key.expiring'])
  const soon = (await actionsOf(gw).createKey({ type: 'bot', role: 'reader', org: 'acme', expiresInMs: 3 * 86_400_000 })).result
  await actionsOf(gw).createKey({ type: 'bot', role: 'reader', org: 'acme', expiresInMs: 30 * 86_400_000 })
  await actionsOf(gw).createKey({ type: 'bot', role: 'reader', org: 'acme' })
  t.ok(await eventually(async () => receiver.received.length >= 1, 5000) >= 0)
  await sleep(500)
  t.equal(receiver.received.length, 1, 'once, and only for the key in the window')
  const body = JSON.parse(receiver.received[0]?.body ?? '{}')
  t.match(body, { type: 'key.expiring', data: { key_id: soon.id, org: 'acme' } })
  t.ok(Date.parse(body.data.expires_at) > Date.now())
})
