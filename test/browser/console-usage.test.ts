/**
 * Usage in the console, in a real headless Chromium against a real gateway: after
 * requests of known outcomes, the Integrations list shows each key's uses of the last
 * 24 h (its refused attempts apart) and a sparkline; a key's chart draws (a uPlot canvas, served from the console's own
 * origin under its CSP) and its table holds exactly the admin API's points; the org
 * chart too; search narrows the list. Screenshots at 1,280 and 375 px go to .scratch/.
 */
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { adminCall, eventually, startGateway } from '../helpers/gateway.js'
import { launchChromium, openContext, watch } from './chromium.js'

const OUT = fileURLToPath(new URL('../../.scratch/', import.meta.url))
interface Point { t: string, allowed: number, refused: number, limited: number, errors: number }

t.test('the Integrations list and a key\'s chart show the counts the API reports', async (t) => {
  mkdirSync(OUT, { recursive: true })
  const adminToken = randomBytes(24).toString('hex')
  const gw = await startGateway(t, { yaml: 'usage: { flush_ms: 100 }', configure: (c) => { c.admin_token = adminToken } })
  const alice = await gw.fixtures.personalKey('alice', { name: 'alice laptop' })
  const bot = await gw.fixtures.botKey('reader', 'acme', { name: 'reports exporter' })
  const idle = await gw.fixtures.botKey('reader', 'globex', { name: 'idle bot' })
  for (let i = 0; i < 7; i++) await gw.get('/api/v1/users', alice.key)
  for (let i = 0; i < 2; i++) await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${alice.key}` })
  for (let i = 0; i < 3; i++) await gw.get('/api/v1/users', bot.key)
  await gw.app.counter.flush()
  const apiPoints = async (path: string): Promise<Point[]> => ((await adminCall(gw, 'GET', path, adminToken)).json() as { points: Point[] }).points

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
      const totalOf = (id: string) => page.locator(`#keys-body tr[data-key-id="${id}"] .usage-total`)
      await totalOf(alice.id).waitFor()
      await totalOf(bot.id).waitFor()
      await totalOf(idle.id).waitFor()
      t.equal(await totalOf(alice.id).getAttribute('data-total'), '7', 'alice: 7 uses in the last 24 h')
      t.equal(await page.locator(`#keys-body tr[data-key-id="${alice.id}"] [data-refused]`).textContent(), '2 refused', 'and her 2 refused apart')
      t.equal(await totalOf(bot.id).getAttribute('data-total'), '3')
      t.equal(await totalOf(idle.id).getAttribute('data-total'), '0')
      await page.locator(`#keys-body tr[data-key-id="${alice.id}"] .spark canvas`).waitFor()
      t.pass('a sparkline is drawn')
      await page.screenshot({ path: `${OUT}console-usage-list-${width}.png`, fullPage: true })

      // the key's chart, by the hour over 24 h (the default range), and its table
      await page.click(`#keys-body tr[data-key-id="${alice.id}"] button[data-action=usage]`)
      await page.locator('#usage-chart canvas').waitFor()
      await page.locator('#usage-table-body tr').nth(23).waitFor({ state: 'attached' })
      const rows = await page.locator('#usage-table-body tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)))
      const points = await apiPoints(`/admin/v1/keys/${alice.id}/usage`)
      t.same(rows, points.map((p) => [p.t.slice(0, 16).replace('T', ' '), String(p.allowed), String(p.refused), String(p.limited), String(p.errors)]), 'the chart\'s table is the API\'s points')
      t.match(await page.locator('#usage-total').textContent(), /^9 requests/)
      const scrollWidth = await page.evaluate('document.documentElement.scrollWidth') as number
      t.ok(scrollWidth <= width, `the page is no wider than the viewport (${scrollWidth} <= ${width})`)
      await page.locator('#usage-panel').screenshot({ path: `${OUT}console-usage-key-${width}.png` })

      // search narrows the list (the API searches, once typing pauses)
      await page.fill('#keys-search', 'exporter')
      t.ok(await eventually(async () => await page.locator('#keys-body tr').count() === 1, 15_000) >= 0, 'the search answered')
      t.equal(await page.locator('#keys-body tr').getAttribute('data-key-id'), bot.id, 'one key matches')
      await page.fill('#keys-search', '')
      t.ok(await eventually(async () => await page.locator('#keys-body tr').count() === 3, 15_000) >= 0, 'every key again')

      // the org chart (Orgs page, admins)
      await page.click('[data-page=orgs]')
      await gw.fixtures.admin.putOrg('acme', { name: 'Acme' })
      await page.click('[data-page=integrations]')
      await page.click('[data-page=orgs]')
      await page.click('#orgs-body tr[data-org="acme"] button[data-action=usage]')
      await page.locator('#usage-chart canvas').waitFor()
      await page.locator('#usage-table-body tr').nth(23).waitFor({ state: 'attached' })
      t.match(await page.locator('#usage-total').textContent(), /^12 requests/, 'the org: alice\'s 9 and the bot\'s 3')
      t.ok(w.requests.every((u) => u.startsWith(origin)), 'every request to the console\'s own origin (uPlot included)')
      t.same(w.problems, [], 'no CSP violation or page error')
    })
  }
})
