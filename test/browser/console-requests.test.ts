/**
 * A key's last decisions in the console (docs/request-log.md), in a real headless
 * Chromium against a real gateway: the Integrations list's **Requests** opens a table of
 * the key's decisions, newest first, the same as the admin API's; it refreshes by itself
 * (a decision made while it is open appears), filters by status, and shows no query
 * string. A screenshot at 1,280 px goes to .scratch/.
 */
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { randomBytes } from 'node:crypto'
import { adminCall, startGateway } from '../helpers/gateway.js'
import { launchChromium, openContext, watch } from './chromium.js'

const OUT = fileURLToPath(new URL('../../.scratch/', import.meta.url))

t.test('a key\'s Requests table: the API\'s decisions, refreshed, filtered by status', async (t) => {
  mkdirSync(OUT, { recursive: true })
  const adminToken = randomBytes(24).toString('hex')
  const gw = await startGateway(t, { yaml: 'request_log: { flush_ms: 100 }', configure: (c) => { c.admin_token = adminToken } })
  const alice = await gw.fixtures.personalKey('alice', { name: 'alice laptop' })
  for (let i = 0; i < 3; i++) await gw.get(`/api/v1/users?page=${i}`, alice.key)
  for (let i = 0; i < 2; i++) await gw.get('/api/v1/orgs/acme/items', alice.key)
  await gw.app.requests.flush()

  const browser = await launchChromium(t)
  const context = await openContext(t, browser, { viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const w = watch(page)
  await page.goto(`http://127.0.0.1:${gw.adminPort}/console/`)
  await page.fill('#sign-in-key', adminToken)
  await page.click('#sign-in-submit')
  await page.click(`#keys-body tr[data-key-id="${alice.id}"] button[data-action=requests]`)
  const rows = page.locator('#requests-body tr')
  await rows.nth(4).waitFor()
  const cells = async (): Promise<string[][]> => await rows.evaluateAll((trs) =>
    trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')))
  const api = (await adminCall(gw, 'GET', `/admin/v1/keys/${alice.id}/requests`, adminToken)).json() as {
    requests: Array<{ path: string, status: number, trace_id: string }>
  }
  t.same((await cells()).map((c) => [c[2], c[3], c[7]]), api.requests.map((r) => [r.path, String(r.status), r.trace_id]),
    'the table is the API\'s decisions, newest first')
  t.same((await cells()).map((c) => c[3]), ['403', '403', '200', '200', '200'])
  t.notOk((await cells()).some((c) => c.join(' ').includes('?')), 'no query string')
  await page.locator('#requests-panel').screenshot({ path: `${OUT}console-requests-1280.png` })

  // it refreshes by itself: a decision made while it is open appears
  await gw.get('/api/v1/users', alice.key)
  await rows.nth(5).waitFor({ timeout: 20_000 })
  t.equal((await cells())[0]?.[3], '200', 'the newest decision appears without a click')

  // filtered by status
  await page.selectOption('#requests-status', '4xx')
  // (a locator's wait: waitForFunction evaluates its predicate in the page, which the console's CSP forbids)
  await rows.nth(2).waitFor({ state: 'detached' })
  t.same((await cells()).map((c) => c[3]), ['403', '403'], 'only the 4xx decisions')
  await page.selectOption('#requests-status', '')
  await rows.nth(5).waitFor()
  await page.click('#requests-close')
  t.ok(await page.locator('#requests-panel').isHidden(), 'closed')
  t.same(w.problems, [], 'no uncaught error, no CSP violation')
})
