/**
 * The console's layout in a real headless Chromium, signed in as an admin with a
 * realistic key table: at 375 px (a phone) the page never scrolls sideways
 * (document scrollWidth <= 375) and every key's Revoke button can be reached inside
 * the viewport; at 1,280 px the whole key table is visible, its Revoke column included,
 * with no horizontal scrolling anywhere. Screenshots at both widths are saved under
 * .scratch/ (not committed) for a look. The strict CSP is never violated.
 */
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { startGateway } from '../helpers/gateway.js'
import { launchChromium, openContext, watch } from './chromium.js'

const OUT = fileURLToPath(new URL('../../.scratch/', import.meta.url))

t.test('the console at 375 px and at 1,280 px', async (t) => {
  mkdirSync(OUT, { recursive: true })
  const adminToken = randomBytes(24).toString('hex')
  const gw = await startGateway(t, { configure: (c) => { c.admin_token = adminToken } })
  // a table as an admin sees it: personal and BOT keys, long names, a rate limit
  await gw.fixtures.personalKey('alice', { name: 'alice laptop (office, second floor)' })
  await gw.fixtures.personalKey('bob', { name: 'bob ci' })
  await gw.fixtures.botKey('orgreader', 'globex-international', { name: 'reports exporter for the finance department', createdBy: 'carol' })
  const limited = await gw.fixtures.botKey('writer', 'acme', { name: 'deploy bot', expiresInMs: 90 * 86_400_000 })
  await gw.client.hset(gw.fixtures.keys.key(limited.id), 'rate_limit', '5000/1h')
  const browser = await launchChromium(t)
  const origin = `http://127.0.0.1:${gw.adminPort}`

  for (const width of [375, 1280]) {
    await t.test(`${width} px`, async (t) => {
      const context = await openContext(t, browser, { viewport: { width, height: 800 } })
      const page = await context.newPage()
      const w = watch(page)
      await page.goto(`${origin}/console/`)
      await page.fill('#sign-in-key', adminToken)
      await page.click('#sign-in-submit')
      await page.locator('#keys-body tr').nth(3).waitFor()
      await page.screenshot({ path: `${OUT}console-${width}.png`, fullPage: true })

      const scrollWidth = await page.evaluate('document.documentElement.scrollWidth') as number
      t.ok(scrollWidth <= width, `the page is no wider than the viewport (${scrollWidth} <= ${width})`)
      const revokes = page.locator('#keys-body button[data-action=revoke]')
      t.equal(await revokes.count(), 4, 'a Revoke button per active key')
      if (width >= 1280) {
        const wrap = await page.evaluate("(() => { const e = document.querySelector('#page-integrations .table-wrap'); return { scroll: e.scrollWidth, client: e.clientWidth } })()") as { scroll: number, client: number }
        t.ok(wrap.scroll <= wrap.client, `the key table fits without scrolling (${wrap.scroll} <= ${wrap.client})`)
      }
      for (let i = 0; i < 4; i++) {
        const button = revokes.nth(i)
        await button.scrollIntoViewIfNeeded()
        const box = await button.boundingBox()
        t.ok(box !== null && box.x >= 0 && box.x + box.width <= width, `Revoke ${i} lies inside the viewport (${JSON.stringify(box)})`)
        if (width >= 1280) t.ok(box !== null && box.x + box.width <= width, 'without any scrolling')
      }
      // the narrow layout still works: the navigation and the Generate button are reachable
      const generate = await page.locator('#generate-open').boundingBox()
      t.ok(generate !== null && generate.x >= 0 && generate.x + generate.width <= width, 'Generate New Key inside the viewport')
      t.same(w.problems, [], 'no CSP violation or page error')
    })
  }
})
