/**
 * A metered key's chart in the console (docs/quotas.md "Setting and seeing an allowance"),
 * in a real headless Chromium against a real gateway: a BOT key with a quota of 50 a
 * month, its org with 1,000 credits, 7 requests allowed. The chart lists what is left of
 * each allowance (the admin API's numbers) and draws the burn-down of the key's quota on
 * its own axis: 50 before the requests, 43 after. An unmetered key's chart has neither.
 * At 1,280 and 375 px, no wider than the viewport; screenshots go to .scratch/.
 */
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { adminCall, startGateway } from '../helpers/gateway.js'
import { launchChromium, openContext, watch } from './chromium.js'

const OUT = fileURLToPath(new URL('../../.scratch/', import.meta.url))

t.test('a metered key\'s chart shows what is left and the burn-down', async (t) => {
  mkdirSync(OUT, { recursive: true })
  const adminToken = randomBytes(24).toString('hex')
  const gw = await startGateway(t, { yaml: 'usage: { flush_ms: 100 }', configure: (c) => { c.admin_token = adminToken } })
  const metered = await gw.fixtures.botKey('reader', 'acme', { name: 'partner feed' })
  const plain = await gw.fixtures.botKey('reader', 'globex', { name: 'plain bot' }) // (globex: no allowance)
  await gw.client.hset(gw.fixtures.keys.key(metered.id), 'quota', '50/month')
  await gw.client.hset(gw.fixtures.keys.org('acme'), 'credits', '1000')
  for (let i = 0; i < 7; i++) t.equal((await gw.get('/api/v1/users', metered.key)).status, 200)
  for (let i = 0; i < 2; i++) t.equal((await gw.get('/api/v1/users', plain.key)).status, 200)
  await gw.app.counter.flush()
  const view = (await adminCall(gw, 'GET', `/admin/v1/keys/${metered.id}/quota`, adminToken)).json() as {
    key: { quota: { remaining: number, resets_at: string } }
  }
  t.equal(view.key.quota.remaining, 43, 'the API: 43 of 50 left')

  const browser = await launchChromium(t)
  const origin = `http://127.0.0.1:${gw.adminPort}`
  for (const width of [1280, 375]) {
    await t.test(`${width} px`, async (t) => {
      const context = await openContext(t, browser, { viewport: { width, height: 900 } })
      const page = await context.newPage()
      const w = watch(page)
      await page.goto(`${origin}/console/`)
      await page.fill('#sign-in-key', adminToken)
      await page.click('#sign-in-submit')

      await page.click(`#keys-body tr[data-key-id="${metered.id}"] button[data-action=usage]`)
      await page.locator('#usage-chart canvas').first().waitFor()
      await page.locator('#usage-quota li').first().waitFor()
      const lines = await page.locator('#usage-quota li').allTextContents()
      t.same(lines, [
        `Key quota: 43 of 50 left (50/month), refills ${view.key.quota.resets_at.slice(0, 16).replace('T', ' ')} UTC`,
        'Org credits: 993 of 1,000 left'
      ], 'what is left of each allowance, as the API says')
      const burn = (await page.locator('#usage-chart').getAttribute('data-burn-down'))?.split(',') ?? []
      t.equal(burn.length, 24, 'one burn-down value per step (24 hours)')
      t.equal(burn.at(-1), '43', 'the last step: what is left now')
      const before = burn.slice(0, -1).filter((v) => v !== '')
      t.ok(before.every((v) => v === '50') || burn.at(-2) === '43',
        `the steps before the requests: the whole quota (${before.join(' ')})`)
      t.ok(await page.locator('.u-legend').getByText('Remaining').count() > 0, 'the legend names the line')
      const scrollWidth = await page.evaluate('document.documentElement.scrollWidth') as number
      t.ok(scrollWidth <= width, `the page is no wider than the viewport (${scrollWidth} <= ${width})`)
      await page.locator('#usage-panel').screenshot({ path: `${OUT}console-quota-key-${width}.png` })

      // an unmetered key: no allowances, no burn-down
      await page.click(`#keys-body tr[data-key-id="${plain.id}"] button[data-action=usage]`)
      // (a locator's wait: waitForFunction evaluates its predicate in the page, which the console's CSP forbids)
      await page.locator('#usage-quota').waitFor({ state: 'hidden' })
      t.ok(await page.locator('#usage-quota').isHidden(), 'no allowance listed')
      await page.locator('#usage-chart canvas').first().waitFor()
      t.equal(await page.locator('#usage-chart').getAttribute('data-burn-down'), '', 'no burn-down')
      t.same(w.problems, [], 'no console errors, failed requests or CSP violations')
    })
  }
})
