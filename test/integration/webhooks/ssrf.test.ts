/**
 * Where webhooks may not go (docs/webhooks.md, SSRF): without
 * webhooks.allow_private_targets, an endpoint on a loopback, link-local, metadata or
 * private address, or a name resolving to one, is refused at registration; one that is
 * there already is refused at delivery, on the connection's own lookup. A redirect is
 * never followed.
 */
import t from 'tap'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { send } from '../../helpers/raw-http.js'
import { startReceiver } from '../../helpers/webhook-receiver.js'
import { adminActions, adminWing } from '../../../src/admin/actions/index.js'
import { FULL_ADMIN } from '../../../src/admin/model/principal.js'

const TOKEN = 'webhooks-ssrf-admin-token-0123456789'

async function api (gw: TestGateway, method: string, target: string, body?: unknown): Promise<{ status: number, json: any }> {
  const headers: Record<string, string> = { Authorization: `Bearer ${TOKEN}` }
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  const res = await send(gw.adminPort, method, `/admin/v1${target}`, headers, body === undefined ? undefined : JSON.stringify(body))
  return { status: res.status, json: res.body === '' ? undefined : JSON.parse(res.body) }
}

t.test('refused at registration without allow_private_targets', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  for (const url of [
    'http://127.0.0.1:9/hook',
    'http://[::1]:9/hook',
    'http://169.254.169.254/latest/meta-data/',
    'http://10.0.0.1/hook',
    'http://localhost:9/hook',
    'http://[::ffff:127.0.0.1]:9/hook',
    'http://100.64.0.1/hook'
  ]) {
    const res = await api(gw, 'POST', '/webhooks', { url, events: ['key.created'] })
    t.equal(res.status, 400, `${url} refused`)
    t.match(JSON.stringify(res.json), /the webhook URL is refused/, url)
  }
  t.equal(await gw.client.scard(`${gw.prefix}webhooks`), 0, 'nothing registered')
  const ftp = await api(gw, 'POST', '/webhooks', { url: 'ftp://example.com/x', events: ['key.created'] })
  t.equal(ftp.status, 400)
})

t.test('refused at delivery: an endpoint whose name resolves to loopback gets nothing', async (t) => {
  // registered while allowed (as if its name resolved elsewhere then), delivered by a gateway that does not allow it
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const gw = await startGateway(t, {
    env: { KEYGATE_ADMIN_TOKEN: TOKEN },
    yaml: 'webhooks: { poll_ms: 30, retry: { base_delay_ms: 100, max_delay_ms: 200 } }'
  })
  const loose = adminActions(adminWing({ ...gw.config, webhooks: { ...gw.config.webhooks, allow_private_targets: true } },
    gw.app.redis), FULL_ADMIN, 'cli:test')
  const hook = await loose.addWebhook({ url: `http://localhost:${receiver.port}/hook`, events: ['key.created'] })
  await adminActions(adminWing(gw.config, gw.app.redis), FULL_ADMIN, 'cli:test')
    .createKey({ type: 'bot', role: 'reader', org: 'acme' })
  let d: any
  t.ok(await eventually(async () => {
    d = (await api(gw, 'GET', `/webhooks/${hook.id}/deliveries`)).json.deliveries[0]
    return d !== undefined && d.attempts >= 2
  }, 5000) >= 0)
  t.match(d, { status: 'retrying', last_error: /refused/ })
  t.equal(receiver.received.length, 0, 'no request reached the receiver')
})

t.test('a redirect is not followed', async (t) => {
  const target = await startReceiver()
  t.teardown(() => target.close())
  const redirector = await startReceiver()
  t.teardown(() => redirector.close())
  redirector.answer = () => ({ status: 307, headers: { location: target.url } })
  const gw = await startGateway(t, {
    env: { KEYGATE_ADMIN_TOKEN: TOKEN },
    yaml: 'webhooks: { allow_private_targets: true, poll_ms: 30, retry: { base_delay_ms: 100, max_delay_ms: 200 } }'
  })
  const added = await api(gw, 'POST', '/webhooks', { url: redirector.url, events: ['key.created'] })
  t.equal(added.status, 201)
  await adminActions(adminWing(gw.config, gw.app.redis), FULL_ADMIN, 'cli:test')
    .createKey({ type: 'bot', role: 'reader', org: 'acme' })
  t.ok(await eventually(async () => redirector.received.length >= 2, 5000) >= 0, 'the redirect is an answer to retry')
  const d = (await api(gw, 'GET', `/webhooks/${added.json.id}/deliveries`)).json.deliveries[0]
  t.match(d, { status: 'retrying', last_status: 307 })
  t.equal(target.received.length, 0, 'the redirect target got nothing')
})
