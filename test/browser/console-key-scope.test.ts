/**
 * Generate New Key's permission picker and address field, in a real headless Chromium
 * against a whole gateway: a self-service user whose own key is scoped, and an admin,
 * each generate a scoped, address-bound key; the picker offers only what the creator
 * may give (a personal key: the creator's own effective permissions; a BOT key: the
 * chosen role's), grouped by resource, "all of the role" by default; the address field
 * flags what is not a CIDR as it is typed; the key list shows scope and addresses; and
 * the gateway holds the key to both. The strict CSP is never violated.
 */
import t from 'tap'
import type { Test } from 'tap'
import type { Page } from 'playwright-core'
import { startGateway } from '../helpers/gateway.js'
import { launchChromium, openContext, watch, type PageWatch } from './chromium.js'

t.test('the scope picker and the address field', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  await f.role('member', ['users:read', 'users:write', 'orgs:read', 'keygate:keys:self'])
  await f.user('dana', 'acme', 'member')
  // dana signs in with a key scoped narrower than her role: orgs:read and users:write are not hers to give
  const { result: dana } = await f.admin.createKey({
    type: 'personal',
    user: 'dana',
    scope: ['keygate:keys:self', 'users:read']
  })
  await f.role('keygate-admin', ['keygate:admin'])
  await f.user('root', 'acme', 'keygate-admin')
  const root = await f.personalKey('root')
  await f.role('ops', ['users:read', 'users:write', 'orgs:read'])

  const browser = await launchChromium(t)
  const origin = `http://127.0.0.1:${gw.adminPort}`

  async function open (t: Test, credential: string): Promise<{ page: Page, w: PageWatch }> {
    const context = await openContext(t, browser, { viewport: { width: 1280, height: 900 } })
    const page = await context.newPage()
    const w = watch(page)
    t.teardown(() => { if (w.problems.length > 0) console.error('console page problems:', w.problems) })
    await page.goto(`${origin}/console`)
    await page.fill('#sign-in-key', credential)
    await page.click('#sign-in-submit')
    await page.locator('#keys-body tr').first().waitFor()
    return { page, w }
  }
  const offered = async (page: Page): Promise<string[]> => (await page.locator('#generate-scope input[type=checkbox]').evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value))).sort()

  /**
   * Opens the Generate dialog and waits until it has loaded: it shows at once, then reads the
   * roles and the orgs' key policies; the role list is filled in the same turn as the expiries
   * the policies allow, so once it holds an option the dialog is ready (each page opens it once).
   */
  async function openGenerate (page: Page): Promise<void> {
    await page.click('#generate-open')
    await page.locator('#generate-role option').first().waitFor({ state: 'attached' })
  }

  async function generated (page: Page): Promise<{ id: string, key: string }> {
    const display = page.locator('[data-testid=new-key]')
    await display.waitFor({ state: 'visible' })
    return { key: await display.inputValue(), id: await page.locator('#reveal-facts dd').first().textContent() ?? '' }
  }

  t.test('self service: a personal key narrower than the signed-in key, bound to loopback', async (t) => {
    const { page, w } = await open(t, dana.key)
    await openGenerate(page)
    await page.check('input[name=type][value=personal]')
    t.ok(await page.isChecked('#generate-scope-all'), '"all of the role" is the default')
    t.ok(await page.isHidden('#generate-scope'), 'the picker opens only when narrowing')
    await page.uncheck('#generate-scope-all')
    t.same(await offered(page), ['keygate:keys:self', 'users:read'], 'only what dana\'s key may give: not orgs:read or users:write, though her role has them')
    t.same(await page.locator('#generate-scope legend').allTextContents(), ['keygate', 'users'], 'grouped by resource')
    await page.uncheck('#generate-scope input[value="keygate:keys:self"]')

    await page.fill('#generate-name', 'scoped laptop')
    await page.fill('#generate-cidrs', '127.0.0.1/32 10.0.0.0/33 nonsense')
    t.equal(await page.getAttribute('#generate-cidrs', 'aria-invalid'), 'true', 'flagged as typed')
    t.match(await page.textContent('#generate-cidrs-hint'), /10\.0\.0\.0\/33, nonsense/)
    await page.fill('#generate-cidrs', '127.0.0.1/32 ::1')
    t.equal(await page.getAttribute('#generate-cidrs', 'aria-invalid'), 'false')
    await page.click('#generate-submit')
    const k = await generated(page)
    t.match(await page.textContent('#reveal-facts'), /users:read/)
    t.match(await page.textContent('#reveal-facts'), /127\.0\.0\.1\/32 ::1/)
    await page.click('#reveal-done')
    const row = page.locator(`tr[data-key-id="${k.id}"]`)
    await row.waitFor()
    t.match(await row.locator('[data-testid=key-scope]').textContent(), /users:read/, 'the key list shows the scope')
    t.match(await row.locator('[data-testid=key-cidrs]').textContent(), /127\.0\.0\.1\/32 ::1/, 'and the addresses')

    t.match(await gw.client.hgetall(`${gw.prefix}key:${k.id}`), { type: 'personal', user: 'dana', scope: 'users:read', allowed_cidrs: '127.0.0.1/32 ::1' })
    t.equal((await gw.get('/api/v1/users', k.key)).status, 200, 'users:read from 127.0.0.1')
    t.equal((await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${k.key}` }, '{}')).status, 403, 'users:write: in her role, not in the scope')
    t.equal((await gw.admin('GET', '/admin/v1/session', { Authorization: `Bearer ${k.key}` })).status, 403, 'keygate:keys:self left out: no admin scope')
    t.same(w.problems, [], 'no uncaught error, no CSP or Trusted Types violation')
  })

  t.test('admin: a BOT key with part of a role, bound to an address range', async (t) => {
    const { page, w } = await open(t, root.key)
    await openGenerate(page)
    await page.check('input[name=type][value=bot]')
    await page.fill('#generate-org', 'acme')
    await page.selectOption('#generate-role', 'ops')
    await page.uncheck('#generate-scope-all')
    t.same(await offered(page), ['orgs:read', 'users:read', 'users:write'], 'the chosen role\'s permissions')
    await page.selectOption('#generate-role', 'reader')
    t.same(await offered(page), ['users:read'], 'another role: its own')
    await page.selectOption('#generate-role', 'ops')
    await page.uncheck('#generate-scope input[value="orgs:read"]')
    await page.fill('#generate-name', 'ops reader')
    await page.fill('#generate-cidrs', '127.0.0.0/8')
    await page.click('#generate-submit')
    const k = await generated(page)
    await page.click('#reveal-done')
    await page.locator(`tr[data-key-id="${k.id}"] [data-testid=key-scope]`).waitFor()
    t.match(await gw.client.hgetall(`${gw.prefix}key:${k.id}`), { type: 'bot', role: 'ops', scope: 'users:read users:write', allowed_cidrs: '127.0.0.0/8' })
    t.equal((await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${k.key}` }, '{}')).status, 200, 'users:write kept')
    t.equal((await gw.get('/api/v1/orgs/acme/x', k.key)).status, 403, 'orgs:read left out')
    t.same(w.problems, [], 'no uncaught error, no CSP or Trusted Types violation')
  })

  t.test('the org\'s key policy bounds the expiries offered', async (t) => {
    await f.admin.putOrg('acme', { keyMaxTtl: '30d' })
    const expiries = async (page: Page): Promise<Record<string, boolean>> => Object.fromEntries(await page.locator('#generate-expiry option').evaluateAll((els) =>
      els.map((e) => { const o = e as unknown as { value: string, disabled: boolean }; return [o.value, o.disabled] })))

    const self = await open(t, dana.key)
    await openGenerate(self.page)
    await self.page.check('input[name=type][value=personal]')
    t.same(await expiries(self.page), { '7d': false, '30d': false, '90d': true, '365d': true, '': false }, 'past the 30-day cap: disabled')
    t.match(await self.page.locator('#generate-expiry option[value=""]').textContent(), /longest allowed \(30 days\)/, '"never" reads as the cap')
    await self.page.fill('#generate-name', 'capped')
    await self.page.click('#generate-submit')
    const k = await generated(self.page)
    const expiresAt = Date.parse((await gw.client.hget(`${gw.prefix}key:${k.id}`, 'expires_at')) ?? '')
    t.ok(expiresAt > Date.now() && expiresAt <= Date.now() + 30 * 86_400_000, 'the key expires within the cap')
    t.same(self.w.problems, [])

    const admin = await open(t, root.key)
    await openGenerate(admin.page)
    await admin.page.check('input[name=type][value=bot]')
    await admin.page.fill('#generate-org', 'acme')
    await admin.page.selectOption('#generate-role', 'ops')
    t.same(await expiries(admin.page), { '7d': false, '30d': false, '90d': true, '365d': true, '': false }, 'an admin\'s BOT key in acme: the cap too')
    await admin.page.fill('#generate-org', 'globex')
    await admin.page.selectOption('#generate-role', 'reader')
    t.same(await expiries(admin.page), { '7d': false, '30d': false, '90d': false, '365d': false, '': false }, 'in an org without a policy: every expiry')
    t.equal(await admin.page.locator('#generate-expiry option[value=""]').textContent(), 'never')
    t.same(admin.w.problems, [])
  })
})
