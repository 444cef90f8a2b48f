/**
 * The console's Webhooks page (docs/webhooks.md, docs/console.md), in a real headless
 * Chromium against a real gateway and a real receiver on 127.0.0.1
 * (`webhooks.allow_private_targets: true`). An admin adds an endpoint (URL, events) and
 * sees its secret once, sends a test (the receiver gets it, signed with that secret),
 * opens its deliveries (outcome, status, latency), sends one again, and removes it. An
 * org admin sees its org's endpoints only. At 1,280 and 375 px, no wider than the
 * viewport; screenshots go to .scratch/.
 */
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { adminCall, eventually, startGateway } from '../helpers/gateway.js'
import { startReceiver } from '../helpers/webhook-receiver.js'
import { launchChromium, openContext, watch } from './chromium.js'

const OUT = fileURLToPath(new URL('../../.scratch/', import.meta.url))
const YAML = 'webhooks: { allow_private_targets: true, poll_ms: 30, timeout_ms: 2000, retry: { base_delay_ms: 100, max_delay_ms: 400 } }'

t.test('webhooks in the console: add, secret once, test, deliveries, send again, remove; an org admin its org\'s', async (t) => {
  mkdirSync(OUT, { recursive: true })
  const adminToken = randomBytes(24).toString('hex')
  const gw = await startGateway(t, { yaml: YAML, configure: (c) => { c.admin_token = adminToken } })
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*'])
  await f.user('gina', 'globex', 'orgadmin')
  const gina = (await f.personalKey('gina')).key
  const receiver = await startReceiver()
  t.teardown(() => receiver.close())
  const acme = await adminCall(gw, 'POST', '/admin/v1/webhooks', adminToken,
    { url: `${receiver.url}/acme`, events: ['key.created'], org: 'acme' })
  t.equal(acme.status, 201, 'an endpoint of acme\'s, through the API')
  const acmeId = (acme.json() as { id: string }).id

  const browser = await launchChromium(t)
  const origin = `http://127.0.0.1:${gw.adminPort}`
  for (const width of [1280, 375]) {
    await t.test(`${width} px`, async (t) => {
      receiver.received.length = 0
      const context = await openContext(t, browser, { viewport: { width, height: 900 } })
      const page = await context.newPage()
      const w = watch(page)
      await page.goto(`${origin}/console/`)
      await page.fill('#sign-in-key', adminToken)
      await page.click('#sign-in-submit')
      await page.click('button[data-page=webhooks]')
      await page.locator(`#webhooks-body tr[data-webhook-id="${acmeId}"]`).waitFor()

      const url = `${receiver.url}/console-${width}`
      await page.click('#webhook-new')
      await page.fill('#webhook-url', url)
      await page.check('#webhook-events input[value="key.created"]')
      await page.check('#webhook-events input[value="quota.threshold"]')
      await page.click('#webhook-submit')
      // the secret is filled in when the API has answered, not when the click returns
      const secretField = page.locator('#webhook-secret')
      await eventually(async () => (await secretField.inputValue()) !== '', 10_000)
      const secret = await secretField.inputValue()
      t.match(secret, /^whsec_/, 'the secret, shown once')
      receiver.secret = secret
      await page.click('#webhook-done')
      t.equal(await page.locator('#webhook-secret').inputValue(), '', 'the secret leaves the page with the dialog')
      const row = page.locator('#webhooks-body tr', { hasText: url })
      await row.waitFor()
      t.equal(await row.locator('[data-field=events]').textContent(), 'key.created, quota.threshold')
      t.equal(await row.locator('[data-field=org]').textContent(), 'every org')
      t.notMatch(await page.content(), /whsec_/, 'no secret in the page after')

      await row.locator('button[data-action=test]').click()
      t.ok(await eventually(async () => receiver.received.some((r) => r.headers['webhook-signature'] !== undefined &&
        JSON.parse(r.body).type === 'webhook.test'), 5000) >= 0, 'the receiver gets the test')
      t.equal(receiver.received.find((r) => JSON.parse(r.body).type === 'webhook.test')?.verified, true, 'signed with the secret shown')

      await row.locator('button[data-action=deliveries]').click()
      const delivery = page.locator('#deliveries-body tr').first()
      await delivery.waitFor()
      t.ok(await eventually(async () => {
        await page.click('#deliveries-refresh')
        return (await delivery.locator('[data-field=outcome]').textContent())?.includes('delivered') === true
      }, 5000) >= 0, 'delivered')
      t.equal(await delivery.locator('[data-field=status]').textContent(), '200')
      t.match(await delivery.locator('[data-field=latency]').textContent(), /^\d+ ms$/)
      const before = receiver.received.length
      await delivery.locator('button[data-action=resend]').click()
      t.ok(await eventually(async () => receiver.received.length > before, 5000) >= 0, 'sent again')

      const scrollWidth = await page.evaluate('document.documentElement.scrollWidth') as number
      t.ok(scrollWidth <= width, `the page is no wider than the viewport (${scrollWidth} <= ${width})`)
      await page.locator('#page-webhooks').screenshot({ path: `${OUT}console-webhooks-${width}.png` })

      await row.locator('button[data-action=remove]').click()
      await page.click('#confirm-ok')
      await row.waitFor({ state: 'detached' })
      const left = (await adminCall(gw, 'GET', '/admin/v1/webhooks', adminToken)).json() as { webhooks: Array<{ url: string }> }
      t.notOk(left.webhooks.some((x) => x.url === url), 'removed')
      t.same(w.problems, [], 'no console errors, failed requests or CSP violations')
    })
  }

  await t.test('an org admin sees its org\'s endpoints only, and adds one for its org', async (t) => {
    const context = await openContext(t, browser, { viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const w = watch(page)
    await page.goto(`${origin}/console/`)
    await page.fill('#sign-in-key', gina)
    await page.click('#sign-in-submit')
    await page.click('button[data-page=webhooks]')
    await page.locator('#webhooks-empty').waitFor()
    t.equal(await page.locator('#webhooks-body tr').count(), 0, 'acme\'s endpoint is not listed')
    await page.click('#webhook-new')
    t.equal(await page.locator('#webhook-org-field').isHidden(), true, 'no org to choose')
    await page.fill('#webhook-url', `${receiver.url}/globex`)
    await page.check('#webhook-events input[value="key.revoked"]')
    await page.click('#webhook-submit')
    await eventually(async () => (await page.locator('#webhook-secret').inputValue()) !== '', 10_000)
    t.match(await page.locator('#webhook-secret').inputValue(), /^whsec_/)
    await page.click('#webhook-done')
    const row = page.locator('#webhooks-body tr').first()
    await row.waitFor()
    t.equal(await row.locator('[data-field=org]').textContent(), 'globex', 'its org\'s')
    t.same(w.problems, [], 'no console errors, failed requests or CSP violations')
  })
})
