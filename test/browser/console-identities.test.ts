/**
 * The console's Identities page (docs/identities.md, docs/console.md), in a real headless
 * Chromium against a real gateway and Redis. An admin lists the identities, creates one
 * (org, external id, meta as JSON, rate limit, quota, credits; an over-1 KB meta refused
 * before anything is written), edits it, opens another to see its keys and its requests
 * (the sum of its keys' counts, and its quota's use), sees a key's identity and meta on
 * the key's view, and deletes both: the one active keys name only after a second
 * confirmation, which revokes them. An org admin sees and creates its own org's only.
 * At 1,280 and 375 px, no wider than the viewport; screenshots go to .scratch/.
 */
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { adminCall, startGateway } from '../helpers/gateway.js'
import { launchChromium, openContext, watch } from './chromium.js'

const OUT = fileURLToPath(new URL('../../.scratch/', import.meta.url))
interface Point { allowed: number, refused: number, limited: number, errors: number }

t.test('identities in the console: list, create, edit, its keys and usage, a key\'s meta, delete', async (t) => {
  mkdirSync(OUT, { recursive: true })
  const adminToken = randomBytes(24).toString('hex')
  const gw = await startGateway(t, { yaml: 'usage: { flush_ms: 100 }', configure: (c) => { c.admin_token = adminToken } })
  const api = async (method: string, path: string, body?: unknown): Promise<{ status: number, json: () => unknown }> =>
    await adminCall(gw, method, `/admin/v1${path}`, adminToken, body)
  const browser = await launchChromium(t)
  const origin = `http://127.0.0.1:${gw.adminPort}`

  for (const width of [1280, 375]) {
    await t.test(`${width} px`, async (t) => {
      // an identity with two BOT keys (one with meta of its own) and 5 requests of them
      const pre = `pre-${width}`
      t.equal((await api('PUT', `/identities/${pre}`, { org: 'acme', external_id: `ext-${pre}`, meta: { plan: 'pro' }, quota: '100/day' })).status, 201)
      const key = async (meta?: Record<string, unknown>): Promise<{ id: string, key: string }> => {
        const r = await api('POST', '/keys', { type: 'bot', role: 'reader', org: 'acme', identity: pre, name: `worker ${width}`, ...meta === undefined ? {} : { meta } })
        t.equal(r.status, 201)
        return r.json() as { id: string, key: string }
      }
      const k1 = await key({ region: 'eu' })
      const k2 = await key()
      for (const k of [k1, k1, k1, k2, k2]) t.equal((await gw.get('/api/v1/users', k.key)).status, 200)
      await gw.app.counter.flush()

      const context = await openContext(t, browser, { viewport: { width, height: 900 } })
      const page = await context.newPage()
      const w = watch(page)
      await page.goto(`${origin}/console/`)
      await page.fill('#sign-in-key', adminToken)
      await page.click('#sign-in-submit')
      await page.click('button[data-page=identities]')

      // the list
      const preRow = page.locator(`#identities-body tr[data-identity-id="${pre}"]`)
      await preRow.waitFor()
      t.equal(await preRow.locator('[data-field=external-id]').textContent(), `ext-${pre}`)
      t.equal(await preRow.locator('[data-field=keys]').textContent(), '2', 'its two keys')
      t.equal(await preRow.locator('[data-field=org]').textContent(), 'acme')

      // create: a meta over 1 KB is refused before anything is written, then the identity is made
      const made = `new-${width}`
      await page.click('#identity-new')
      await page.fill('#identity-id', made)
      await page.fill('#identity-org', 'acme')
      await page.fill('#identity-external-id', `ext-${made}`)
      await page.fill('#identity-meta', JSON.stringify({ m: 'x'.repeat(1017) }))
      await page.click('#identity-submit')
      await page.locator('#identity-error').waitFor()
      t.equal(await page.locator('#identity-error').textContent(), 'Meta is 1025 bytes of JSON, more than 1024.')
      t.equal((await api('GET', `/identities/${made}`)).status, 404, 'nothing written')
      await page.fill('#identity-meta', '{"plan": "enterprise", "seats": 3}')
      await page.fill('#identity-rate-limit', '100/1m')
      await page.fill('#identity-quota', '1000/day')
      await page.fill('#identity-credits', '50')
      await page.click('#identity-submit')
      const madeRow = page.locator(`#identities-body tr[data-identity-id="${made}"]`)
      await madeRow.waitFor()
      t.match((await api('GET', `/identities/${made}`)).json(), {
        org: 'acme', external_id: `ext-${made}`, meta: { plan: 'enterprise', seats: 3 }, rate_limit: '100/1m', quota: '1000/day', credits: '50'
      }, 'the registry holds what was typed')
      t.equal(await madeRow.locator('[data-field=meta-fields]').textContent(), 'meta: plan, seats')

      // edit: a new external id, the rate limit removed, 25 credits added
      await madeRow.locator('button[data-action=edit]').click()
      t.equal(await page.locator('#identity-id').getAttribute('readonly'), '', 'the id is fixed')
      t.same(JSON.parse(await page.locator('#identity-meta').inputValue()), { plan: 'enterprise', seats: 3 }, 'its meta, to edit')
      await page.fill('#identity-external-id', `ext-${made}-2`)
      await page.fill('#identity-rate-limit', '')
      await page.fill('#identity-credits', '25')
      await page.click('#identity-submit')
      await madeRow.locator('[data-field=external-id]', { hasText: `ext-${made}-2` }).waitFor()
      const edited = (await api('GET', `/identities/${made}`)).json() as Record<string, unknown>
      t.match(edited, { external_id: `ext-${made}-2`, credits: '75', meta: { plan: 'enterprise', seats: 3 } })
      t.equal(edited.rate_limit, undefined, 'the emptied rate limit is removed')

      // open: its facts, its keys, and its requests (the sum of its keys' counts, and its quota's use)
      await preRow.locator('button[data-action=open]').click()
      await page.locator('#identity-panel').waitFor()
      await page.locator(`#identity-keys-body tr[data-key-id="${k1.id}"]`).waitFor()
      t.same(await page.locator('#identity-keys-body tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-key-id')).sort()),
        [k1.id, k2.id].sort(), 'its two keys')
      t.equal(await page.locator('#identity-facts [data-field=meta]').textContent(), '{"plan":"pro"}')
      await page.locator('#usage-chart canvas').first().waitFor()
      await page.locator('#usage-total', { hasText: '5 requests in the range' }).waitFor()
      const usage = (await api('GET', `/identities/${pre}/usage`)).json() as { keys: number, points: Point[] }
      t.equal(usage.keys, 2)
      t.equal(usage.points.reduce((n, p) => n + p.allowed, 0), 5, 'the API sums the same 5')
      t.match(await page.locator('#usage-quota li').first().textContent(), /^Identity quota: 95 of 100 left \(100\/day\), refills /)

      // a key's view: its identity and its own meta
      await page.locator(`#identity-keys-body tr[data-key-id="${k1.id}"] button[data-action=key-usage]`).click()
      await page.locator('#usage-facts [data-field=meta]').waitFor()
      t.equal(await page.locator('#usage-facts [data-field=identity]').textContent(), pre)
      t.equal(await page.locator('#usage-facts [data-field=meta]').textContent(), '{"region":"eu"}')
      const scrollWidth = await page.evaluate('document.documentElement.scrollWidth') as number
      t.ok(scrollWidth <= width, `the page is no wider than the viewport (${scrollWidth} <= ${width})`)
      await page.screenshot({ path: `${OUT}console-identities-${width}.png`, fullPage: true })

      // delete: the one its keys name only after a second confirmation, which revokes them
      await preRow.locator('button[data-action=delete]').click()
      await page.click('#confirm-ok')
      await page.locator('#confirm-error').waitFor()
      t.match(await page.locator('#confirm-error').textContent(), /^2 active key\(s\) name the identity\. Delete it anyway\?/)
      t.equal((await api('GET', `/identities/${pre}`)).status, 200, 'not deleted yet')
      t.equal(await page.locator('#confirm-ok').textContent(), 'Delete and revoke its keys')
      await page.click('#confirm-ok')
      await preRow.waitFor({ state: 'detached' })
      t.match(await page.locator('#identities-notice').textContent(), new RegExp(`${k1.id}.*${k2.id}|${k2.id}.*${k1.id}`))
      t.ok(await page.locator('#identity-panel').isHidden(), 'its panel closes')
      t.equal((await api('GET', `/identities/${pre}`)).status, 404, 'deleted')
      t.equal((await gw.get('/api/v1/users', k1.key)).status, 401, 'its keys are revoked')
      await madeRow.locator('button[data-action=delete]').click()
      await page.click('#confirm-ok')
      await madeRow.waitFor({ state: 'detached' })
      t.equal((await api('GET', `/identities/${made}`)).status, 404, 'an identity no key names: one confirmation')
      t.same(w.problems, [], 'no console errors, failed requests or CSP violations')
    })
  }

  await t.test('an org admin lists and creates its own org\'s identities only', async (t) => {
    await gw.fixtures.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*'])
    await gw.fixtures.user('gina', 'globex', 'orgadmin')
    const gina = (await gw.fixtures.personalKey('gina')).key
    t.equal((await api('PUT', '/identities/acme-only', { org: 'acme', external_id: 'a-1' })).status, 201)
    t.equal((await api('PUT', '/identities/globex-one', { org: 'globex', external_id: 'g-1' })).status, 201)
    const context = await openContext(t, browser, { viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const w = watch(page)
    await page.goto(`${origin}/console/`)
    await page.fill('#sign-in-key', gina)
    await page.click('#sign-in-submit')
    await page.click('button[data-page=identities]')
    await page.locator('#identities-body tr[data-identity-id="globex-one"]').waitFor()
    t.equal(await page.locator('#identities-body tr').count(), 1, 'acme\'s identity is not listed')
    await page.click('#identity-new')
    t.ok(await page.locator('#identity-org-field').isHidden(), 'no org to choose')
    t.equal(await page.locator('#identity-org-hint').textContent(), 'In your org, globex.')
    await page.fill('#identity-id', 'globex-two')
    await page.fill('#identity-external-id', 'g-2')
    await page.click('#identity-submit')
    await page.locator('#identities-body tr[data-identity-id="globex-two"]').waitFor()
    t.match((await api('GET', '/identities/globex-two')).json(), { org: 'globex', external_id: 'g-2' }, 'in its own org')
    t.same(w.problems, [], 'no console errors, failed requests or CSP violations')
  })
})
