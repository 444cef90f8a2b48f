/**
 * An org of 5,000 keys in the console, in a real headless Chromium against a real
 * gateway, signed in as the org's admin: the Integrations page shows the first page of
 * 50 (paged by the API, not the browser), with every row's last 24 h from one usage
 * read a page; Next and Previous move through the API's pages; a search (sent once
 * typing pauses) finds one key among 5,000 and never another org's; the layout holds at
 * 375 px; the usage chart's time axis is UTC in a browser set to another time zone.
 * Screenshots at 1,280 and 375 px go to KEYGATE_SHOTS (default .scratch/).
 */
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { eventually, startGateway } from '../helpers/gateway.js'
import { launchChromium, openContext, watch } from './chromium.js'

const OUT = process.env.KEYGATE_SHOTS ?? fileURLToPath(new URL('../../.scratch/', import.meta.url))
const KEYS = 5000
const PAGE = 50

/**
 * Waits until `check` holds (the page is driven by the API's answers), else fails naming `what`.
 * (A search pages through the org's 5,000 keys a few requests at a time: a minute, for a busy machine.)
 */
async function until (what: string, check: () => Promise<boolean>): Promise<void> {
  if (await eventually(check, 60_000, 50) < 0) throw new Error(`timed out waiting for ${what}`)
}

t.test('an org of 5,000 keys: pages, search and usage from the API', async (t) => {
  mkdirSync(OUT, { recursive: true })
  const gw = await startGateway(t, { yaml: 'usage: { flush_ms: 100 }' })
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*'])
  await f.user('oscar', 'acme', 'orgadmin')
  const orgAdmin = await f.personalKey('oscar', { name: 'oscar console' })
  const seeded = Date.now()
  const bulk = await f.bulkBotKeys('reader', 'acme', Array.from({ length: KEYS - 2 }, (_, i) => `acme service ${String(i).padStart(4, '0')}`))
  t.comment(`${bulk.length} keys written in one pipeline in ${Date.now() - seeded} ms`)
  const needle = await f.botKey('reader', 'acme', { name: 'billing webhook' })
  await f.bulkBotKeys('reader', 'globex', ['globex billing webhook', 'globex billing mirror'])
  for (let i = 0; i < 3; i++) await gw.get('/api/v1/users', needle.key)
  await gw.app.counter.flush()
  t.equal(await gw.client.scard(f.keys.orgKeys('acme')), KEYS, 'acme holds 5,000 keys')

  const browser = await launchChromium(t)
  const origin = `http://127.0.0.1:${gw.adminPort}`
  for (const width of [1280, 375]) {
    await t.test(`${width} px`, async (t) => {
      // (a browser far from UTC: a chart drawn in local time would show :30 past the hour)
      const context = await openContext(t, browser, { viewport: { width, height: 900 }, timezoneId: 'Asia/Kolkata' })
      const page = await context.newPage()
      const w = watch(page)
      const usageReads = (): string[] => w.requests.filter((u) => /\/admin\/v1\/(usage\/keys|keys\/[^/?]+\/usage)/.test(u))
      const listReads = (): string[] => w.requests.filter((u) => /\/admin\/v1\/keys(\?|$)/.test(u))
      const rowIds = async (): Promise<string[]> => await page.locator('#keys-body tr').evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-key-id') ?? ''))
      const rowCount = async (): Promise<number> => await page.locator('#keys-body tr').count()
      const usageShown = async (): Promise<void> => { await until('every row\'s usage', async () => { const n = await rowCount(); return n > 0 && await page.locator('#keys-body tr .usage-total').count() === n }) }
      const pageLabel = async (label: string): Promise<void> => { await until(`the page label ${label}`, async () => await page.locator('#keys-page').textContent() === label) }

      await page.goto(`${origin}/console/`)
      await page.fill('#sign-in-key', orgAdmin.key)
      await page.click('#sign-in-submit')
      await page.locator('#keys-body tr').nth(PAGE - 1).waitFor()
      await usageShown()
      t.equal(await page.locator('#keys-body tr').count(), PAGE, 'the first page: 50 rows')
      t.equal(await page.locator('#keys-page').textContent(), '1-50')
      t.equal(listReads().length, 1, 'one list request')
      t.match(listReads()[0], /limit=50/, 'a page asked of the API')
      t.equal(usageReads().length, 1, 'one usage request for the page\'s 50 keys')
      t.match(usageReads()[0], /\/usage\/keys\?ids=/)
      const first = await rowIds()
      t.same(first, [...first].sort(), 'in key id order')
      t.ok(await page.locator('#keys-prev').isDisabled(), 'no page before the first')
      await page.screenshot({ path: `${OUT}/keys-5000-${width}.png` })
      const scrollWidth = await page.evaluate('document.documentElement.scrollWidth') as number
      t.ok(scrollWidth <= width, `the page is no wider than the viewport (${scrollWidth} <= ${width})`)

      // Next: the API's next page, and its usage in one read
      await page.click('#keys-next')
      await pageLabel('51-100')
      await usageShown()
      const second = await rowIds()
      t.equal(second.length, PAGE)
      t.ok(second.every((id) => id > (first[PAGE - 1] as string)), 'the next 50 keys, after the first page\'s')
      t.match(listReads()[1], /cursor=/, 'asked with the cursor')
      t.equal(usageReads().length, 2, 'one more usage request for the second page')
      await page.click('#keys-prev')
      await pageLabel('1-50')
      t.same(await rowIds(), first, 'Previous: the first page again')
      await usageShown()
      t.equal(usageReads().length, 3)

      // search: one key among 5,000, not globex's namesakes
      const before = listReads().length
      // (typed a character an input event, all in one task of the page, so that a loaded
      // machine cannot stretch the keystrokes past the debounce: the debounce is what is tested)
      await page.locator('#keys-search').focus()
      await page.evaluate(`(() => {
        const input = document.getElementById('keys-search')
        const text = 'billing webhook'
        for (let i = 1; i <= text.length; i++) {
          input.value = text.slice(0, i)
          input.dispatchEvent(new Event('input', { bubbles: true }))
        }
      })()`)
      await until('one row', async () => await rowCount() === 1).catch(async (err: unknown) => {
        t.comment(JSON.stringify({ value: await page.inputValue('#keys-search'), label: await page.locator('#keys-page').textContent(), rows: await rowCount(), reads: listReads().slice(before) }))
        throw err
      })
      t.same(await rowIds(), [needle.id], 'the one acme key named so')
      const total = page.locator(`#keys-body tr[data-key-id="${needle.id}"] .usage-total`)
      await total.waitFor()
      t.equal(await total.getAttribute('data-total'), '3', 'its 3 requests of the last 24 h')
      // (typing is debounced: only the whole text is sent; the API reads at most 2,000 keys
      // a request, so the page asks on with the cursor until it is full or at the end)
      const searches = listReads().slice(before)
      t.ok(searches.length >= 1 && searches.length <= Math.ceil(KEYS / 2000), `${searches.length} requests for the search`)
      t.ok(searches.every((u) => /q=billing(\+|%20)webhook(&|$)/.test(u)), 'each with the whole typed text, none with a part of it')
      t.equal(usageReads().length, 4)
      t.ok(await page.locator('#keys-next').isDisabled(), 'no further page')
      await page.screenshot({ path: `${OUT}/keys-5000-search-${width}.png` })

      // the key's chart: its time axis and legend in UTC
      await page.click(`#keys-body tr[data-key-id="${needle.id}"] button[data-action=usage]`)
      const over = page.locator('#usage-chart .u-over')
      await over.waitFor()
      const box = await over.boundingBox()
      if (box === null) throw new Error('no chart')
      await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.5)
      const legendTime = await page.locator('#usage-chart .u-legend .u-series').first().locator('.u-value').textContent()
      t.match(legendTime, /:00(am|pm)?$/, `the hovered point's time is on the hour, UTC (${legendTime ?? ''})`)
      t.ok(w.requests.every((u) => u.startsWith(origin)), 'every request to the console\'s own origin')
      t.same(w.problems, [], 'no CSP violation or page error')
    })
  }
})
