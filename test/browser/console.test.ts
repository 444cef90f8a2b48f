/**
 * The Integrations console in a real headless Chromium, against a whole gateway
 * (real Redis, real admin API, real upstream), as issue 5 describes it:
 *
 *   a user with keygate:keys:self signs in, generates a personal key, reads it from
 *   the one-time display, calls the gateway with it (200), revokes it in the console,
 *   calls again (401); generates a BOT key with one of the roles they may assign and
 *   its permissions hold at the gateway;
 *   an admin defines a new role by ticking permissions while generating a BOT key,
 *   and deactivates and activates a user on the Users page;
 *   the admin token (which has no user and no org) issues a BOT key in another org;
 *   an org admin (keygate:org:admin) sees and manages its own org only: its keys and
 *   users, personal keys for itself only and BOT keys in its org (which expire), no Roles page;
 *   an admin sets a key's, a role's and an org's rate limit, and the gateway applies them.
 * A badge beside the principal names the scope.
 *
 * Throughout: the credential is never stored (no localStorage, sessionStorage,
 * cookie, IndexedDB or URL), the key leaves the page when its display is closed,
 * every request stays on the admin plane's origin, and the strict CSP (Trusted Types
 * included) is never violated.
 *
 * With KEYGATE_SCREENSHOT set, the admin's Integrations page is saved as
 * docs/console-integrations.png (the picture in docs/console.md and docs/managing.md).
 */
import t from 'tap'
import type { Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { BrowserContext, Page } from 'playwright-core'
import { eventually, startGateway } from '../helpers/gateway.js'
import type { EchoBody } from '../helpers/upstream.js'
import { launchChromium, openContext, watch, type PageWatch } from './chromium.js'

const SCREENSHOT = fileURLToPath(new URL('../../docs/console-integrations.png', import.meta.url))

interface Generated { key: string, id: string }

interface GenerateOptions {
  type: 'personal' | 'bot'
  name: string
  expiry?: string
  user?: string
  role?: string
  org?: string
  newRole?: { name: string, permissions: string[] }
}

t.test('the Integrations console, end to end in Chromium', async (t) => {
  const adminToken = randomBytes(24).toString('hex')
  const gw = await startGateway(t, { configure: (c) => { c.admin_token = adminToken } })
  // a self-service user and an admin, each with the personal key they sign in with
  await gw.fixtures.role('member', ['users:read', 'keygate:keys:self'])
  await gw.fixtures.user('dana', 'acme', 'member')
  await gw.fixtures.role('keygate-admin', ['keygate:admin'])
  await gw.fixtures.user('root', 'acme', 'keygate-admin')
  const dana = await gw.fixtures.personalKey('dana', { name: 'console sign-in' })
  const root = await gw.fixtures.personalKey('root', { name: 'console sign-in' })
  const alice = await gw.fixtures.personalKey('alice', { name: 'alice laptop' })
  const exporter = await gw.fixtures.botKey('orgreader', 'globex', { name: 'reports exporter' })
  await gw.fixtures.role('acme-admin', ['keygate:org:admin', 'users:*'])
  await gw.fixtures.user('olga', 'acme', 'acme-admin')
  const olga = await gw.fixtures.personalKey('olga', { name: 'console sign-in' })
  const bobsBot = await gw.fixtures.botKey('reader', 'acme', { name: 'bob\'s job', createdBy: 'bob' })

  const browser = await launchChromium(t)
  const origin = `http://127.0.0.1:${gw.adminPort}`
  const secrets = [dana.key, root.key, alice.key, olga.key, bobsBot.key, exporter.key, adminToken]

  async function open (t: Test): Promise<{ page: Page, context: BrowserContext, w: PageWatch }> {
    const context = await openContext(t, browser, { viewport: { width: 1280, height: 760 } })
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin })
    const page = await context.newPage()
    const w = watch(page)
    // when a step times out, the page's own complaint is usually the reason
    t.teardown(() => { if (w.problems.length > 0) console.error('console page problems:', w.problems) })
    await page.goto(`${origin}/console`)
    return { page, context, w }
  }

  /** What must hold for every page, whatever it did. */
  function pageWasClean (t: Test, w: PageWatch): void {
    t.same(w.problems, [], 'no uncaught error, no CSP or Trusted Types violation')
    t.same(w.requests.filter((u) => !u.startsWith(origin + '/')), [], 'every request went to the admin plane, none to a CDN')
    t.same(w.requests.filter((u) => secrets.some((s) => u.includes(s))), [], 'no URL carried a key')
  }

  t.test('a credential that is not accepted keeps the sign-in page', async (t) => {
    const { page, w } = await open(t)
    for (const [credential, why] of [['kg_not_a_key', 'a malformed key'], [alice.key, 'a key without keygate:admin or keygate:keys:self']]) {
      await page.fill('#sign-in-key', credential as string)
      await page.click('#sign-in-submit')
      await page.locator('#sign-in-error').waitFor({ state: 'visible' })
      t.match(await page.textContent('#sign-in-error'), /not accepted/, why as string)
      t.ok(await page.isHidden('#app-view'), 'the console stays closed')
    }
    pageWasClean(t, w)
  })

  t.test('self service: a personal key works until it is revoked; a BOT key gets its role', async (t) => {
    const { page, context, w } = await open(t)
    await signIn(page, dana.key)
    t.match(await page.textContent('[data-testid=principal]'), /dana \(acme, role member\)/)
    t.equal(await page.textContent('[data-testid=scope]'), 'Own keys: dana', 'the scope badge')
    t.equal(await page.inputValue('#sign-in-key'), '', 'the credential left the sign-in field')
    t.ok(await page.isHidden('[data-page=users]'), 'no Users page for a non-admin')
    t.ok(await page.isHidden('[data-page=roles]'), 'no Roles page for a non-admin')
    t.ok(await page.isVisible('tr[data-key-id="' + dana.id + '"]'), 'the key list shows her own keys')
    t.notOk(await page.isVisible('tr[data-key-id="' + alice.id + '"]'), 'and not other users\' keys')

    // Generate New Key -> Personal: the role is hers, shown read-only
    await page.click('#generate-open')
    t.equal(await page.textContent('[data-testid=personal-role]'), 'member')
    const personal = await generate(t, page, { type: 'personal', name: 'laptop', expiry: '30d' })
    t.match(personal.key, /^kg_/, 'the one-time display shows the key')
    t.match(await page.textContent('#reveal'), /shown only once/, 'with a clear warning')
    await page.click('#reveal-copy')
    await page.locator('#reveal-copy-status').filter({ hasText: 'Copied' }).waitFor()
    t.equal(await page.evaluate('navigator.clipboard.readText()'), personal.key, 'Copy puts the key on the clipboard')
    await closeReveal(page)
    t.notOk(await pageHolds(page, personal.key), 'closing the display removes the key from the page')
    t.same(await stored(page, context), { local: 0, session: 0, cookie: '', idb: 0, cookies: 0 }, 'nothing stored in the browser')

    const ok = await gw.get('/api/v1/users', personal.key)
    t.equal(ok.status, 200, 'the new personal key calls the gateway')
    t.equal((ok.json() as EchoBody).headers['x-auth-user-id'], 'dana', 'as dana')

    // revoke, after the confirmation
    const row = page.locator(`tr[data-key-id="${personal.id}"]`)
    await row.locator('[data-action=revoke]').click()
    await page.locator('#confirm-dialog').waitFor({ state: 'visible' })
    t.match(await page.textContent('#confirm-message'), /cannot be undone/)
    await page.click('#confirm-ok')
    await page.locator(`tr[data-key-id="${personal.id}"][data-status="revoked"]`).waitFor()
    t.ok(await eventually(async () => (await gw.get('/api/v1/users', personal.key)).status === 401) >= 0, 'revocation reaches the gateway')
    t.equal((await gw.get('/api/v1/users', personal.key)).status, 401, 'the revoked key gets 401')

    // Generate New Key -> BOT: only roles within her own grants are offered
    await page.click('#generate-open')
    await page.check('input[name=type][value=bot]')
    const offered = await page.locator('#generate-role option').allTextContents()
    t.ok(offered.includes('reader'), `reader is offered (${offered.join(', ')})`)
    t.notOk(offered.includes('writer') || offered.includes('admin'), 'no role broader than her own')
    t.ok(await page.isHidden('#generate-role-mode'), 'a non-admin cannot define a role')
    const bot = await generate(t, page, { type: 'bot', name: 'ci reader', role: 'reader' })
    await closeReveal(page)
    const read = await gw.get('/api/v1/users', bot.key)
    t.equal(read.status, 200, 'the BOT key may read users (reader: users:read)')
    t.equal((read.json() as EchoBody).headers['x-auth-key-type'], 'bot')
    t.equal((read.json() as EchoBody).headers['x-auth-role'], 'reader')
    const write = await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${bot.key}` }, '{}')
    t.equal(write.status, 403, 'but not create them (no users:write)')
    await page.locator(`tr[data-key-id="${bot.id}"][data-status="active"]`).waitFor()

    t.same(await stored(page, context), { local: 0, session: 0, cookie: '', idb: 0, cookies: 0 }, 'still nothing stored')
    t.notOk(await pageHolds(page, dana.key), 'the sign-in key is nowhere in the page')
    t.notOk(page.url().includes('kg_'), 'nor in the URL')

    // signing out, or a reload, forgets the credential
    await page.click('#sign-out')
    t.ok(await page.isVisible('#sign-in-view'))
    await page.reload()
    t.ok(await page.isVisible('#sign-in-view'), 'a reload starts signed out')
    t.ok(await page.isHidden('#app-view'))
    pageWasClean(t, w)
  })

  t.test('admin: a BOT key with a newly defined role; Users and Roles pages', async (t) => {
    const { page, context, w } = await open(t)
    await signIn(page, root.key)
    t.match(await page.textContent('[data-testid=principal]'), /root .*admin/)
    t.equal(await page.textContent('[data-testid=scope]'), 'Admin (all orgs)', 'the scope badge')
    t.ok(await page.isVisible(`tr[data-key-id="${alice.id}"]`), 'an admin sees every key')

    const bot = await generate(t, page, { type: 'bot', name: 'deploy bot', org: 'acme', newRole: { name: 'deployer', permissions: ['users:write'] } })
    await closeReveal(page)
    const created = await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${bot.key}` }, '{}')
    t.equal(created.status, 200, 'the new role grants users:write')
    t.equal((created.json() as EchoBody).headers['x-auth-role'], 'deployer')
    t.equal((await gw.get('/api/v1/users', bot.key)).status, 403, 'and nothing it was not given (users:read)')
    t.same(await gw.client.hget(`${gw.prefix}role:deployer`, 'permissions'), 'users:write', 'the role is in the registry')

    const forAlice = await generate(t, page, { type: 'personal', name: 'issued by admin', user: 'alice' })
    await closeReveal(page)
    t.equal((await gw.get('/api/v1/users', forAlice.key)).status, 200, 'an admin issues a personal key for another user')

    // a refused Generate New Key shows the API's details under the form (bob is deactivated while the dialog is open)
    await page.click('#generate-open')
    await page.check('input[name=type][value=personal]')
    await page.locator('#generate-user option[value="bob"]').waitFor({ state: 'attached' })
    await page.selectOption('#generate-user', 'bob')
    await gw.client.hset(`${gw.prefix}user:bob`, 'status', 'deactivated')
    try {
      await page.click('#generate-submit')
      const detail = page.locator('#generate-error li[data-field="user"]')
      await detail.waitFor()
      t.equal(await detail.textContent(), 'user "bob" is deactivated', 'the refusal\'s detail, under the form that failed')
      t.ok(await page.isHidden('[data-testid=new-key]'), 'no key')
    } finally {
      await gw.client.hset(`${gw.prefix}user:bob`, 'status', 'active')
    }
    await page.click('#generate-cancel')

    if (process.env.KEYGATE_SCREENSHOT !== undefined && process.env.KEYGATE_SCREENSHOT !== '') {
      await page.locator(`tr[data-key-id="${forAlice.id}"]`).waitFor()
      await page.screenshot({ path: SCREENSHOT, fullPage: true })
    }

    await page.click('[data-page=roles]')
    const role = page.locator('tr[data-role="deployer"]')
    await role.waitFor()
    t.match(await role.textContent(), /users:write/, 'the Roles page lists the new role')

    // Users: deactivating stops the user's personal keys; activating restores them
    await page.click('[data-page=users]')
    await page.locator('tr[data-user-id="alice"][data-status="active"] [data-action=deactivate]').click()
    t.match(await page.textContent('#confirm-message'), /personal key/)
    await page.click('#confirm-ok')
    await page.locator('tr[data-user-id="alice"][data-status="deactivated"]').waitFor()
    t.ok(await eventually(async () => (await gw.get('/api/v1/users', alice.key)).status === 401) >= 0, 'deactivation reaches the gateway')
    t.equal((await gw.get('/api/v1/users', alice.key)).status, 401, 'alice\'s personal key stops')
    await page.locator('tr[data-user-id="alice"] [data-action=activate]').click()
    await page.locator('tr[data-user-id="alice"][data-status="active"]').waitFor()
    t.ok(await eventually(async () => (await gw.get('/api/v1/users', alice.key)).status === 200) >= 0, 'activation reaches the gateway')
    t.equal((await gw.get('/api/v1/users', alice.key)).status, 200, 'and works again')

    t.same(await stored(page, context), { local: 0, session: 0, cookie: '', idb: 0, cookies: 0 }, 'nothing stored in the browser')
    pageWasClean(t, w)
  })

  t.test('admin: rate limits of a key, a role and an org', async (t) => {
    await gw.fixtures.role('limited', ['users:read'])
    const target = await gw.fixtures.botKey('limited', 'initech', { name: 'limited bot' })
    const { page, w } = await open(t)
    await signIn(page, root.key)
    const row = page.locator(`tr[data-key-id="${target.id}"]`)
    await row.waitFor()
    t.match(await row.textContent(), /none/, 'no limit yet')

    // a key's own limit
    await row.locator('[data-action=limit]').click()
    await page.fill('#limit-value', '7/1m')
    await page.click('#limit-submit')
    await page.locator(`tr[data-key-id="${target.id}"] code:text("7/1m")`).waitFor()
    t.equal(await gw.client.hget(`${gw.prefix}key:${target.id}`, 'rate_limit'), '7/1m', "the key's limit is in the registry")
    t.ok(await eventually(async () => (await gw.get('/api/v1/users', target.key)).headers['ratelimit-limit'] === '7') >= 0, 'and the gateway applies it')
    await row.locator('[data-action=limit]').click()
    await page.click('#limit-remove')
    await page.locator('#limit-dialog').waitFor({ state: 'hidden' })
    t.equal(await gw.client.hget(`${gw.prefix}key:${target.id}`, 'rate_limit'), null, 'removed')

    // a role's limit, in the role editor
    await page.click('[data-page=roles]')
    await page.locator('tr[data-role="limited"] [data-action=edit]').click()
    await page.fill('#role-rate-limit', '5/1m')
    await page.click('#role-submit')
    await page.locator('tr[data-role="limited"] code:text("5/1m")').waitFor()
    t.equal(await gw.client.hget(`${gw.prefix}role:limited`, 'rate_limit'), '5/1m', "the role's limit is in the registry")

    // an org's limit, on the Orgs page; a malformed one is refused by the form
    await page.click('[data-page=orgs]')
    await page.click('#org-new')
    await page.fill('#limit-org', 'initech')
    await page.fill('#limit-value', '3 per minute')
    await page.click('#limit-submit')
    t.ok(await page.isVisible('#limit-dialog'), 'a malformed limit is not sent')
    await page.fill('#limit-value', '3/1m')
    await page.click('#limit-submit')
    // (the page lists the org before it has a record, as an org in use: wait for its record's row)
    const org = page.locator('tr[data-org="initech"][data-record="true"]', { hasText: '3/1m' })
    t.ok(await org.waitFor({ timeout: 10_000 }).then(() => true, () => false), 'the Orgs page lists the org and its limit')
    t.notMatch(await org.textContent(), /no record/, 'as an org with a record')
    t.ok(await eventually(async () => (await gw.get('/api/v1/users', target.key)).headers['ratelimit-limit'] === '3') >= 0, "the org's stricter limit applies")
    pageWasClean(t, w)
  })

  t.test('the admin token: a BOT key in another org', async (t) => {
    const { page, context, w } = await open(t)
    await signIn(page, adminToken)
    t.equal(await page.textContent('[data-testid=principal]'), 'Admin token')
    t.equal(await page.textContent('[data-testid=scope]'), 'Admin (all orgs)')
    const bot = await generate(t, page, { type: 'bot', name: 'globex reports', org: 'globex', role: 'orgreader' })
    t.equal(await page.textContent('#reveal-warnings li[data-field="org"]'), 'org "globex" has no record: it has no name and no org rate limit until one is put', 'the API\'s warning is shown with the new key')
    await closeReveal(page)
    t.equal((await gw.get('/api/v1/orgs/globex/reports', bot.key)).status, 200, 'the key works in its org')
    t.equal((await gw.get('/api/v1/orgs/acme/reports', bot.key)).status, 403, 'and only there')
    t.same(await stored(page, context), { local: 0, session: 0, cookie: '', idb: 0, cookies: 0 }, 'nothing stored in the browser')
    t.notOk(await pageHolds(page, adminToken), 'the token is nowhere in the page')
    pageWasClean(t, w)
  })

  t.test('org admin: its own org\'s keys and users only; no Roles page', async (t) => {
    const { page, context, w } = await open(t)
    await signIn(page, olga.key)
    t.equal(await page.textContent('[data-testid=scope]'), 'Org admin: acme', 'the scope badge')
    t.ok(await page.isVisible('[data-page=users]'), 'a Users page')
    t.ok(await page.isHidden('[data-page=roles]'), 'no Roles page')
    await page.locator(`tr[data-key-id="${alice.id}"]`).waitFor()
    t.ok(await page.isVisible(`tr[data-key-id="${bobsBot.id}"]`), 'its org\'s keys, other users\' included')
    t.notOk(await page.isVisible(`tr[data-key-id="${exporter.id}"]`), 'no key of another org')
    t.match(await page.textContent('#integrations-scope'), /org acme/)

    // Generate: a personal key for itself only (a personal key acts as its user, so an org
    // admin never makes one for another user); a BOT key in its org, which expires
    await page.click('#generate-open')
    await page.check('input[name=type][value=personal]')
    // (the form fills its lists once the API answered)
    await page.locator('#generate-role option[value="writer"]').waitFor({ state: 'attached' })
    t.ok(await page.isHidden('#generate-user-row'), 'no user to pick: its own personal keys only')
    t.equal(await page.textContent('[data-testid=personal-role]'), 'acme-admin', 'the key acts with its own role')
    const own = await generate(t, page, { type: 'personal', name: 'olga laptop' })
    await closeReveal(page)
    t.match(await gw.client.hgetall(`${gw.prefix}key:${own.id}`), { type: 'personal', user: 'olga', org: 'acme' })

    await page.click('#generate-open')
    await page.check('input[name=type][value=bot]')
    t.ok(await page.isHidden('#generate-org-row'), 'the org is its own, not a choice')
    t.ok(await page.isHidden('#generate-role-mode'), 'it cannot define roles')
    const offered = await page.locator('#generate-role option').allTextContents()
    t.ok(offered.includes('writer'), `roles within its permissions are offered (${offered.join(', ')})`)
    t.notOk(offered.includes('keygate-admin') || offered.includes('admin') || offered.includes('orgreader'), 'no role beyond them')
    await page.selectOption('#generate-role', 'writer')
    t.ok(await page.locator('#generate-expiry option[value="365d"]').isDisabled(), 'a year is longer than its BOT keys may live: not offered')
    t.notOk(await page.locator('#generate-expiry option[value="90d"]').isDisabled(), '90 days is')
    t.match(await page.locator('#generate-expiry option[value=""]').textContent(), /longest allowed \(90 days\)/, '"never" reads as the limit')
    await page.check('input[name=type][value=personal]')
    t.notOk(await page.locator('#generate-expiry option[value="365d"]').isDisabled(), 'a personal key may live a year')
    await page.check('input[name=type][value=bot]')
    const bot = await generate(t, page, { type: 'bot', name: 'acme sync', role: 'writer', expiry: '' })
    t.notMatch(await page.textContent('#reveal-facts'), /never/, 'the BOT key expires')
    await closeReveal(page)
    t.match(await gw.client.hgetall(`${gw.prefix}key:${bot.id}`), { org: 'acme', role: 'writer', created_by: 'user:olga' })

    // Users: its org only; deactivating bob names the BOT keys bob created
    await page.click('[data-page=users]')
    await page.locator('tr[data-user-id="bob"]').waitFor()
    t.notOk(await page.isVisible('tr[data-user-id="carol"]'), 'no user of another org')
    await page.locator('tr[data-user-id="bob"][data-status="active"] [data-action=deactivate]').click()
    await page.click('#confirm-ok')
    await page.locator('tr[data-user-id="bob"][data-status="deactivated"]').waitFor()
    await page.locator('[data-testid=users-notice]').waitFor({ state: 'visible' })
    t.match(await page.textContent('[data-testid=users-notice]'), bobsBot.id, 'the BOT keys bob created, still working')
    t.equal((await gw.get('/api/v1/users', bobsBot.key)).status, 200, 'and they do')
    await page.locator('tr[data-user-id="bob"] [data-action=activate]').click()
    await page.locator('tr[data-user-id="bob"][data-status="active"]').waitFor()

    t.same(await stored(page, context), { local: 0, session: 0, cookie: '', idb: 0, cookies: 0 }, 'nothing stored in the browser')
    pageWasClean(t, w)
  })

  async function signIn (page: Page, credential: string): Promise<void> {
    await page.fill('#sign-in-key', credential)
    await page.click('#sign-in-submit')
    await page.locator('#keys-body tr').first().waitFor()
  }

  async function generate (t: Test, page: Page, o: GenerateOptions): Promise<Generated> {
    if (!await page.isVisible('#generate-dialog')) await page.click('#generate-open')
    await page.check(`input[name=type][value=${o.type}]`)
    await page.fill('#generate-name', o.name)
    if (o.expiry !== undefined) await page.selectOption('#generate-expiry', o.expiry)
    if (o.user !== undefined) await page.selectOption('#generate-user', o.user)
    if (o.org !== undefined) await page.fill('#generate-org', o.org)
    if (o.role !== undefined) await page.selectOption('#generate-role', o.role)
    if (o.newRole !== undefined) {
      await page.check('input[name=role-mode][value=new]')
      await page.fill('#generate-new-role-name', o.newRole.name)
      for (const p of o.newRole.permissions) await page.check(`#generate-new-role-permissions input[value="${p}"]`)
    }
    await page.click('#generate-submit')
    const display = page.locator('[data-testid=new-key]')
    await display.waitFor({ state: 'visible' })
    const key = await display.inputValue()
    const id = await page.locator('#reveal-facts dd').first().textContent() ?? ''
    t.ok(key.includes(id) && id !== '', 'the display names the key id')
    return { key, id }
  }

  async function closeReveal (page: Page): Promise<void> {
    await page.click('#reveal-done')
    await page.locator('#generate-dialog').waitFor({ state: 'hidden' })
  }
})

/** Whether `secret` is anywhere in the page: its markup or any field's value. */
async function pageHolds (page: Page, secret: string): Promise<boolean> {
  const s = JSON.stringify(secret)
  return await page.evaluate(`document.documentElement.outerHTML.includes(${s}) ||
    [...document.querySelectorAll('input, textarea')].some((el) => el.value.includes(${s}))`) as boolean
}

/** What the browser holds for this origin. */
async function stored (page: Page, context: BrowserContext): Promise<Record<string, unknown>> {
  const inPage = await page.evaluate(`(async () => ({
    local: localStorage.length,
    session: sessionStorage.length,
    cookie: document.cookie,
    idb: (await indexedDB.databases()).length
  }))()`) as Record<string, unknown>
  return { ...inPage, cookies: (await context.cookies()).length }
}
