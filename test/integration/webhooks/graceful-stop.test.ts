/**
 * A graceful stop while a delivery is in flight loses nothing (docs/webhooks.md "The
 * guarantee"): real Redis, two gateway instances, a slow real receiver. The instance
 * sending stops mid-request; the delivery completes (settled as delivered by that
 * instance before it stops) and the instance left sends it no second time.
 */
import t from 'tap'
import { adminActions, adminWing } from '../../../src/admin/actions/index.js'
import { FULL_ADMIN } from '../../../src/admin/model/principal.js'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { send } from '../../helpers/raw-http.js'
import { startReceiver } from '../../helpers/webhook-receiver.js'

const TOKEN = 'webhooks-stop-admin-token-0123456789'
const YAML = `
webhooks: { allow_private_targets: true, poll_ms: 30, timeout_ms: 5000, retry: { base_delay_ms: 100, max_delay_ms: 400 } }
`

async function api (gw: TestGateway, method: string, target: string, body?: unknown): Promise<{ status: number, json: any }> {
  const headers: Record<string, string> = { Authorization: `Bearer ${TOKEN}` }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  const res = await send(gw.adminPort, method, `/admin/v1${target}`, headers, body === undefined ? undefined : JSON.stringify(body))
  return { status: res.status, json: res.body === '' ? undefined : JSON.parse(res.body) }
}

t.test('an instance stopped while its delivery is in flight: the delivery completes, once', async (t) => {
  const a = await startGateway(t, { yaml: YAML, env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const added = await api(a, 'POST', '/webhooks', { url: receiver.url, events: ['key.created'] })
  t.equal(added.status, 201)
  receiver.secret = added.json.secret
  receiver.delayMs = 1500
  // a second instance starts after the event is fanned out by the first
  const actions = adminActions(adminWing(a.config, a.app.redis), FULL_ADMIN, 'cli:test')
  const { result } = await actions.createKey({ type: 'bot', role: 'reader', org: 'acme' })
  t.ok(await eventually(async () => receiver.received.length >= 1, 5000) >= 0, 'the delivery is in flight')
  const b = await startGateway(t, {
    yaml: YAML, env: { KEYGATE_ADMIN_TOKEN: TOKEN }, redis: a.redis, prefix: a.prefix, seed: false
  })

  const stopping = Date.now()
  await a.app.close()
  t.ok(Date.now() - stopping >= 500, 'the stop waited for the delivery in flight')
  const deliveries = (await api(b, 'GET', `/webhooks/${added.json.id as string}/deliveries`)).json.deliveries
  t.match(deliveries, [{ status: 'delivered', attempts: 1, last_status: 200 }], 'settled as delivered by the stopping instance')
  await new Promise((resolve) => setTimeout(resolve, 1000)) // time for a second send to show up
  t.equal(receiver.received.length, 1, 'sent once: the instance left does not send it again')
  t.equal(receiver.received[0]?.verified, true)
  t.equal(JSON.parse(receiver.received[0]?.body ?? '{}').data.key_id, result.id)
})
