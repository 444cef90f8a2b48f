/**
 * The admin's console in a real headless Chromium against a whole gateway (real Redis,
 * real admin API, real upstream), at 1,280 and 375 px wide and 800 px high:
 *
 *   the scope picker offers the concrete permissions of the catalogue under a wildcard,
 *   so a BOT key of a role of `*` is narrowed to users:read (and holds at the gateway);
 *   ticking a `keygate:` permission in the new-role grid asks first, with a warning;
 *   Generate New Key's buttons stay in view at 800 px high;
 *   Users: an admin creates a user, changes its role and its org, and sees no Deactivate
 *   for itself (the API refuses it: 409);
 *   Orgs lists the orgs in use (named on users and keys), not only org records;
 *   the key list counts uses (refusals apart); the usage chart draws bars, its legend shows
 *   each class's total until hovered, and its ticks are whole counts and 24-hour UTC times;
 *   the admin key table fits at 1,280 px and the page never scrolls sideways;
 *   a self-service user whose role grants users:* narrows a personal key to users:read.
 * Each flow is checked in what the page shows and in what the registry holds afterwards.
 */
import t from 'tap'
import type { Test } from 'tap'
import { randomBytes } from 'node:crypto'
import type { Page } from 'playwright-core'
import { adminCall, eventually, startGateway } from '../helpers/gateway.js'
import { launchChromium, openContext, watch } from './chromium.js'

const HEIGHT = 800

t.test('the admin console at 1,280 and 375 px', async (t) => {
  const adminToken = randomBytes(24).toString('hex')
  const gw = await startGateway(t, { yaml: 'usage: { flush_ms: 100 }', configure: (c) => { c.admin_token = adminToken } })
  const f = gw.fixtures
  await f.role('keygate-admin', ['keygate:admin'])
  await f.user('root', 'acme', 'keygate-admin')
  const root = await f.personalKey('root', { name: 'console sign-in' })
  await f.role('star', ['*'])
  await f.role('users-all', ['users:*', 'orgs:read'])
  await f.role('member', ['users:*', 'keygate:keys:self'])
  await f.user('dana', 'acme', 'member')
  const dana = await f.personalKey('dana', { name: 'console sign-in' })
  // the list as an admin sees it: long names, a rate limit, and a revoked key an old client still hammers
  await f.role('finance-reports-readonly', ['orgs:read'])
  await f.botKey('finance-reports-readonly', 'globex-international', { name: 'reports exporter for the finance department', createdBy: 'carol' })
  const used = await f.botKey('reader', 'initech', { name: 'nightly sync' })
  const revoked = await f.botKey('reader', 'initech', { name: 'old sync (revoked)' })
  await gw.client.hset(f.keys.key(used.id), 'rate_limit', '5000/1h')
  for (let i = 0; i < 4; i++) t.equal((await gw.get('/api/v1/users', used.key)).status, 200)
  await adminCall(gw, 'POST', `/admin/v1/keys/${revoked.id}/revoke`, adminToken, {})
  for (let i = 0; i < 6; i++) t.equal((await gw.get('/api/v1/users', revoked.key)).status, 401)
  await gw.app.counter.flush()

  const browser = await launchChromium(t)
  const origin = `http://127.0.0.1:${gw.adminPort}`

  for (const width of [1280, 375]) {
    await t.test(`${width} px`, async (t) => {
      const context = await openContext(t, browser, { viewport: { width, height: HEIGHT } })
      const page = await context.newPage()
      const w = watch(page)
      t.teardown(() => { if (w.problems.length > 0) console.error('console page problems:', w.problems) })
      await page.goto(`${origin}/console/`)
      await page.fill('#sign-in-key', root.key)
      await page.click('#sign-in-submit')
      await page.locator(`#keys-body tr[data-key-id="${used.id}"] .usage-total`).waitFor()

      await t.test('the key list counts uses, refusals apart; the table fits', async (t) => {
        const usage = (id: string) => page.locator(`#keys-body tr[data-key-id="${id}"] .usage`)
        await usage(revoked.id).locator('.usage-total').waitFor()
        t.equal(await usage(used.id).locator('.usage-total').getAttribute('data-total'), '4', '4 uses')
        t.equal(await usage(revoked.id).locator('.usage-total').getAttribute('data-total'), '0', 'the revoked key: no use')
        t.equal(await usage(revoked.id).locator('[data-refused]').textContent(), '6 refused', 'its refused attempts apart')
        await noSidewaysScroll(t, page, width)
        if (width === 1280) {
          const wrap = await page.evaluate("(() => { const e = document.querySelector('#page-integrations .table-wrap'); return { scroll: e.scrollWidth, client: e.clientWidth } })()") as { scroll: number, client: number }
          t.ok(wrap.scroll <= wrap.client, `the admin key table fits at 1,280 px (${wrap.scroll} <= ${wrap.client})`)
          const minimum = await page.evaluate("(() => { const e = document.querySelector('#keys-table'); e.style.width = 'min-content'; const w = e.getBoundingClientRect().width; e.style.width = ''; return w })()") as number
          t.ok(minimum <= wrap.client - 24, `with room to spare: its narrowest is ${Math.round(minimum)} px of ${wrap.client}`)
        }
      })

      await t.test('the usage chart: bars, totals in the legend, whole counts, 24-hour UTC', async (t) => {
        await page.click(`#keys-body tr[data-key-id="${used.id}"] button[data-action=usage]`)
        await page.locator('#usage-chart canvas').waitFor()
        const legend = await page.locator('#usage-chart .u-legend .u-series').evaluateAll((rows) => rows.map((r) =>
          [r.querySelector('.u-label')?.textContent, r.querySelector('.u-value')?.textContent]))
        t.same(legend, [['Time (UTC)', 'whole range'], ['Errors', '0'], ['Limited', '0'], ['Refused', '0'], ['Allowed', '4']],
          'each class\'s total before any hover, not --')
        t.ok(await solidBlock(page, [47, 125, 79]), 'an Allowed bar: a solid block of its colour, not a line')
        const ticks = await page.evaluate(`import('./usage.js').then((m) => ({
          integers: m.COUNT_INCRS.every(Number.isInteger),
          hours: m.timeTicks(null, [Date.UTC(2026, 0, 2, 13) / 1000, Date.UTC(2026, 0, 2, 21, 30) / 1000, Date.UTC(2026, 0, 3) / 1000], 0, 0, 3600),
          days: m.timeTicks(null, [Date.UTC(2026, 0, 2) / 1000], 0, 0, 86400)
        }))`) as { integers: boolean, hours: string[], days: string[] }
        t.ok(ticks.integers, 'count ticks step by whole numbers only')
        t.same(ticks.hours, ['13:00', '21:30', '01-03'], '24-hour UTC times; a new day by its date')
        t.same(ticks.days, ['01-02'])
        const first = await page.locator('#usage-table-body tr td').first().textContent()
        t.match(first, /^\d{4}-\d{2}-\d{2} \d{2}:00$/, 'the table: 24-hour UTC too')
        await noSidewaysScroll(t, page, width)
        await page.click('#usage-close')
      })

      await t.test('the picker narrows a role of * to users:read', async (t) => {
        await page.click('#generate-open')
        await page.check('input[name=type][value=bot]')
        const suggested = await page.locator('#generate-orgs option').evaluateAll((os) => os.map((o) => o.getAttribute('value')))
        t.ok(['acme', 'globex-international', 'initech'].every((o) => suggested.includes(o)), 'the Org field suggests the orgs in use')
        await page.fill('#generate-org', 'acme')
        await page.selectOption('#generate-role', 'users-all')
        await page.uncheck('#generate-scope-all')
        t.same(await offered(page), ['orgs:read', 'users:*', 'users:read', 'users:write'], 'users:* with the catalogue\'s users: permissions')
        await page.selectOption('#generate-role', 'star')
        t.same(await offered(page), ['*', 'orgs:read', 'users:read', 'users:write'], '* with every concrete permission, no keygate: one')
        t.ok(await page.isDisabled('#generate-scope input[value="users:read"]'), 'locked while * is ticked')
        await page.uncheck('#generate-scope input[value="*"]')
        t.ok(await page.isEnabled('#generate-scope input[value="users:read"]'), 'free once * is unticked')
        await page.uncheck('#generate-scope input[value="users:write"]')
        await page.uncheck('#generate-scope input[value="orgs:read"]')
        await page.fill('#generate-name', `reader ${width}`)
        await buttonsInView(t, page, '#generate-submit')
        await page.click('#generate-submit')
        await page.locator('[data-testid=new-key]').waitFor({ state: 'visible' })
        const key = await page.locator('[data-testid=new-key]').inputValue()
        const id = await page.locator('#reveal-facts dd').first().textContent() ?? ''
        await buttonsInView(t, page, '#reveal-done')
        await page.click('#reveal-done')
        t.match(await gw.client.hgetall(f.keys.key(id)), { type: 'bot', role: 'star', org: 'acme', scope: 'users:read' }, 'the registry: role *, scope users:read')
        t.equal((await gw.get('/api/v1/users', key)).status, 200, 'users:read holds')
        t.equal((await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${key}` }, '{}')).status, 403, 'users:write does not')
      })

      await t.test('a keygate: permission in the new-role grid asks first', async (t) => {
        const role = `ops-admins-${width}`
        await page.click('#generate-open')
        await page.check('input[name=type][value=bot]')
        await page.fill('#generate-org', 'acme')
        await page.check('input[name=role-mode][value=new]')
        await page.fill('#generate-new-role-name', role)
        const admin = page.locator('#generate-new-role-permissions input[value="keygate:admin"]')
        await admin.click()
        await page.locator('#confirm-dialog').waitFor({ state: 'visible' })
        t.match(await page.textContent('#confirm-message'), /administer the whole registry/, 'a warning of what it grants')
        await page.click('#confirm-cancel')
        t.notOk(await admin.isChecked(), 'cancelled: left unticked')
        await admin.click()
        await page.click('#confirm-ok')
        t.ok(await admin.isChecked(), 'confirmed: ticked')
        await page.check('#generate-new-role-permissions input[value="users:read"]')
        t.notOk(await page.isVisible('#confirm-dialog'), 'no question for an ordinary permission')
        await buttonsInView(t, page, '#generate-submit')
        await page.click('#generate-submit')
        await page.locator('[data-testid=new-key]').waitFor({ state: 'visible' })
        await page.click('#reveal-done')
        t.same((await gw.client.hget(f.keys.role(role), 'permissions'))?.split(' ').sort(), ['keygate:admin', 'users:read'], 'the registry holds the role as confirmed')

        // the Roles editor asks too
        await page.click('[data-page=roles]')
        await page.click('#role-new')
        const orgAdmin = page.locator('#role-permissions input[value="keygate:org:admin"]')
        await orgAdmin.click()
        await page.locator('#confirm-dialog').waitFor({ state: 'visible' })
        t.match(await page.textContent('#confirm-message'), /manage their org's users and keys/)
        await page.click('#confirm-cancel')
        t.notOk(await orgAdmin.isChecked(), 'the Roles editor: cancelled, left unticked')
        await page.click('#role-cancel')
        await page.click('[data-page=integrations]')
      })

      await t.test('Users: create, change role and org; no self-deactivation', async (t) => {
        const id = `newbie-${width}`
        await page.click('[data-page=users]')
        await page.locator('tr[data-user-id="root"]').waitFor()
        t.equal(await page.locator('tr[data-user-id="root"] [data-action=deactivate]').count(), 0, 'no Deactivate for oneself')
        t.equal(await page.locator('tr[data-user-id="alice"] [data-action=deactivate]').count(), 1, 'but for others')
        const refused = await adminCall(gw, 'POST', '/admin/v1/users/root/deactivate', root.key, {})
        t.equal(refused.status, 409, 'the API refuses it too')
        t.equal(await gw.client.hget(f.keys.user('root'), 'status'), 'active')

        await page.click('#user-new')
        await page.fill('#user-id', id)
        await page.fill('#user-name', 'New Bie')
        await page.fill('#user-org', 'umbrella')
        await page.selectOption('#user-role', 'reader')
        await buttonsInView(t, page, '#user-submit')
        await page.click('#user-submit')
        await page.locator(`tr[data-user-id="${id}"]`).waitFor()
        t.match(await gw.client.hgetall(f.keys.user(id)), { org: 'umbrella', role: 'reader', status: 'active', name: 'New Bie' }, 'created in the registry')

        await page.click(`tr[data-user-id="${id}"] [data-action=edit]`)
        await page.locator('#user-dialog').waitFor({ state: 'visible' })
        t.equal(await page.inputValue('#user-org'), 'umbrella')
        await page.selectOption('#user-role', 'writer')
        await page.fill('#user-org', 'globex')
        await page.click('#user-submit')
        const row = page.locator(`tr[data-user-id="${id}"]`)
        t.ok(await eventually(async () => await row.locator('[data-field=org]').textContent() === 'globex', 10_000) >= 0, 'the list shows the new org')
        t.equal(await row.locator('[data-field=role]').textContent(), 'writer')
        t.match(await gw.client.hgetall(f.keys.user(id)), { org: 'globex', role: 'writer', status: 'active', name: 'New Bie' }, 'role and org changed in the registry')
        t.notOk(await gw.client.sismember(f.keys.orgUsers('umbrella'), id), 'and out of the old org\'s index')
        await page.screenshot({ path: `.scratch/console-admin-users-${width}.png`, fullPage: true })
        await noSidewaysScroll(t, page, width)
      })

      await t.test('Orgs: the orgs in use, with or without a record', async (t) => {
        await page.click('[data-page=orgs]')
        await page.locator('#orgs-body tr[data-org="initech"]').waitFor()
        const rows = await page.locator('#orgs-body tr').evaluateAll((trs) => trs.map((tr) => [
          tr.getAttribute('data-org'), tr.getAttribute('data-record'),
          tr.querySelector('[data-field=users]')?.textContent, tr.querySelector('[data-field=keys]')?.textContent]))
        t.same(rows.find((r) => r[0] === 'initech'), ['initech', 'false', '0', '2'], 'initech: two BOT keys, no record')
        t.same(rows.find((r) => r[0] === 'globex-international'), ['globex-international', 'false', '0', '1'])
        t.ok(rows.some((r) => r[0] === 'acme'), 'acme, named on users')
        t.notOk(await page.isVisible('#orgs-empty'), 'not "no org"')
        await page.screenshot({ path: `.scratch/console-admin-orgs-${width}.png`, fullPage: true })
        await noSidewaysScroll(t, page, width)
      })

      t.same(w.problems, [], 'no uncaught error, no CSP or Trusted Types violation')
      t.ok(w.requests.every((u) => u.startsWith(origin)), 'every request to the console\'s own origin')
    })

    await t.test(`${width} px: a self-service user narrows users:* to users:read`, async (t) => {
      const context = await openContext(t, browser, { viewport: { width, height: HEIGHT } })
      const page = await context.newPage()
      const w = watch(page)
      await page.goto(`${origin}/console/`)
      await page.fill('#sign-in-key', dana.key)
      await page.click('#sign-in-submit')
      await page.locator('#keys-body tr').first().waitFor()
      await page.click('#generate-open')
      await page.check('input[name=type][value=personal]')
      await page.uncheck('#generate-scope-all')
      t.same(await offered(page), ['keygate:keys:self', 'users:*', 'users:read', 'users:write'],
        'her wildcard with the concrete permissions it covers (GET /session\'s catalogue)')
      await page.uncheck('#generate-scope input[value="users:*"]')
      await page.uncheck('#generate-scope input[value="users:write"]')
      await page.uncheck('#generate-scope input[value="keygate:keys:self"]')
      await page.fill('#generate-name', `dana reader ${width}`)
      await buttonsInView(t, page, '#generate-submit')
      await page.click('#generate-submit')
      await page.locator('[data-testid=new-key]').waitFor({ state: 'visible' })
      const key = await page.locator('[data-testid=new-key]').inputValue()
      const id = await page.locator('#reveal-facts dd').first().textContent() ?? ''
      await page.click('#reveal-done')
      t.match(await gw.client.hgetall(f.keys.key(id)), { type: 'personal', user: 'dana', scope: 'users:read' }, 'the registry: scope users:read')
      t.equal((await gw.get('/api/v1/users', key)).status, 200, 'users:read holds')
      t.equal((await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${key}` }, '{}')).status, 403, 'users:write does not')
      t.same(w.problems, [], 'no uncaught error, no CSP or Trusted Types violation')
    })
  }
})

async function offered (page: Page): Promise<string[]> {
  return (await page.locator('#generate-scope input[type=checkbox]').evaluateAll((els) =>
    els.map((e) => (e as unknown as { value: string }).value))).sort()
}

async function noSidewaysScroll (t: Test, page: Page, width: number): Promise<void> {
  const scrollWidth = await page.evaluate('document.documentElement.scrollWidth') as number
  t.ok(scrollWidth <= width, `the page is no wider than the viewport (${scrollWidth} <= ${width})`)
}

/** The dialog's submit button lies inside the viewport as the dialog opens, without scrolling to it. */
async function buttonsInView (t: Test, page: Page, selector: string): Promise<void> {
  const box = await page.locator(selector).boundingBox()
  t.ok(box !== null && box.y >= 0 && box.y + box.height <= HEIGHT, `${selector} in view at ${HEIGHT} px high (${JSON.stringify(box)})`)
}

/** Whether the usage chart's canvas holds an 8 x 8 px block of `rgb` (a bar; a line is 2 px wide). */
async function solidBlock (page: Page, rgb: [number, number, number]): Promise<boolean> {
  return await page.evaluate(`(() => {
    const c = document.querySelector('#usage-chart canvas')
    const { width, height } = c
    const d = c.getContext('2d').getImageData(0, 0, width, height).data
    const is = (x, y) => { const i = (y * width + x) * 4; return Math.abs(d[i] - ${rgb[0]}) <= 3 && Math.abs(d[i + 1] - ${rgb[1]}) <= 3 && Math.abs(d[i + 2] - ${rgb[2]}) <= 3 }
    for (let y = 0; y + 8 < height; y += 2) for (let x = 0; x + 8 < width; x += 2) {
      let all = true
      for (let dy = 0; dy < 8 && all; dy++) for (let dx = 0; dx < 8 && all; dx++) all = is(x + dx, y + dy)
      if (all) return true
    }
    return false
  })()`)
}
