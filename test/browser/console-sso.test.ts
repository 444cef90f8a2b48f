/**
 * SSO in a real headless Chromium: the console's "Sign in with <provider>", the
 * provider's own login page (oidc-provider, over real HTTP), back in the console as
 * that person; a personal key generated (narrowed by the scope picker), copied, working at the gateway (200),
 * revoked (401); sign-out ends the session. A refused person sees why on the sign-in
 * page. The strict CSP is never violated and the page never sees the session id.
 *
 * Screenshots go to .scratch/ (not committed).
 */
import t from 'tap'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Page } from 'playwright-core'
import { ssoWorld } from '../helpers/oidc-provider.js'
import { launchChromium, openContext, watch } from './chromium.js'

const SHOTS = fileURLToPath(new URL('../../.scratch/', import.meta.url))

t.test('the console with SSO, end to end in Chromium', async (t) => {
  mkdirSync(SHOTS, { recursive: true })
  const w = await ssoWorld(t)
  const browser = await launchChromium(t)
  const context = await openContext(t, browser, { viewport: { width: 1280, height: 760 } })
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: w.adminUrl })
  const page = await context.newPage()
  const watching = watch(page)
  // what the console's own pages asked for (the provider's dev login page loads a web font of its own)
  const fromConsole: string[] = []
  page.on('request', (r) => { if (r.frame().url().startsWith(w.adminUrl)) fromConsole.push(r.url()) })
  t.teardown(() => { if (watching.problems.length > 0) console.error('console page problems:', watching.problems) })

  await page.goto(`${w.adminUrl}/console/`)
  const button = page.locator('[data-testid=sso-sign-in]')
  await button.waitFor({ state: 'visible' })
  t.equal(await button.textContent(), 'Sign in with Test IdP')
  t.ok(await page.isVisible('#sign-in-key'), 'the key sign-in stays beside it')
  await page.screenshot({ path: `${SHOTS}sso-1-sign-in.png` })

  // the provider's own login page (its page asks for a web font: not waited for, the machine may be offline)
  await button.click()
  await page.waitForURL((u) => u.href.startsWith(w.issuer), { waitUntil: 'domcontentloaded' })
  await page.fill('input[name=login]', 'dana')
  await page.fill('input[name=password]', 'any')
  await page.screenshot({ path: `${SHOTS}sso-2-provider-login.png` })
  await page.click('button[type=submit]')

  // back in the console as dana
  await page.waitForURL(`${w.adminUrl}/console/`)
  await page.locator('#app-view').waitFor({ state: 'visible' })
  t.match(await page.textContent('[data-testid=principal]'), /dana \(acme, role self-service\), signed in with SSO/)
  t.equal(await page.textContent('[data-testid=scope]'), 'Own keys: dana')
  t.equal(await page.evaluate('document.cookie'), '', 'the session cookie is HttpOnly: the page never sees it')
  const cookies = await context.cookies(w.adminUrl)
  const session = cookies.find((c) => c.name === 'keygate_session')
  t.match(session, { httpOnly: true, sameSite: 'Strict', path: '/' })

  // Generate New Key -> Personal, narrowed to part of dana's role (the picker offers her grants)
  await page.click('#generate-open')
  await page.check('input[name=type][value=personal]')
  await page.uncheck('#generate-scope-all')
  const offered = await page.locator('#generate-scope input[type=checkbox]').evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value))
  t.same(offered.sort(), ['keygate:keys:self', 'users:read'], 'the picker offers what the session may give')
  await page.uncheck('#generate-scope input[value="keygate:keys:self"]')
  await page.fill('#generate-name', 'sso laptop')
  await page.click('#generate-submit')
  const display = page.locator('[data-testid=new-key]')
  await display.waitFor({ state: 'visible' })
  const key = await display.inputValue()
  const id = await page.locator('#reveal-facts dd').first().textContent() ?? ''
  t.match(key, /^kg_/)
  await page.screenshot({ path: `${SHOTS}sso-3-new-key.png` })
  await page.click('#reveal-copy')
  await page.locator('#reveal-copy-status').filter({ hasText: 'Copied' }).waitFor()
  const copied = await page.evaluate('navigator.clipboard.readText()') as string
  t.equal(copied, key, 'copied')
  await page.click('#reveal-done')
  t.equal((await w.gw.get('/api/v1/users', copied)).status, 200, 'the key made from the session calls the gateway')
  t.equal(await w.gw.client.hget(`${w.gw.prefix}key:${id}`, 'created_by'), 'user:dana', 'created_by user:dana')
  t.equal(await w.gw.client.hget(`${w.gw.prefix}key:${id}`, 'scope'), 'users:read', 'scoped to users:read')
  t.equal((await w.gw.admin('GET', '/admin/v1/session', { Authorization: `Bearer ${copied}` })).status, 403, 'keygate:keys:self left out: the key signs in to nothing')

  // revoke it in the console
  const row = page.locator(`tr[data-key-id="${id}"]`)
  await row.locator('[data-action=revoke]').click()
  await page.click('#confirm-ok')
  await page.locator(`tr[data-key-id="${id}"][data-status="revoked"]`).waitFor()
  await page.screenshot({ path: `${SHOTS}sso-4-revoked.png` })
  t.equal((await w.gw.get('/api/v1/users', copied)).status, 401, 'revoked: 401')

  // a reload keeps the person signed in (the cookie), sign-out ends it everywhere
  await page.reload()
  await page.locator('#app-view').waitFor({ state: 'visible' })
  await page.click('#sign-out')
  await page.locator('#sign-in-view').waitFor({ state: 'visible' })
  t.not(await waitGone(w.gw.client, `${w.gw.prefix}session:*`), false, 'sign-out deleted the session in Redis')

  // a person keygate does not know (a fresh browser: no session at the provider either):
  // refused, with the reason on the sign-in page
  const fresh = await openContext(t, browser, { viewport: { width: 1280, height: 760 } })
  const other = await fresh.newPage()
  const watchingOther = watch(other)
  await other.goto(`${w.adminUrl}/console/`)
  await refusedAs(other, w.issuer, 'mallory')
  t.match(await other.textContent('#sign-in-error'), /no keygate user matches the subject "mallory"/)
  t.equal(new URL(other.url()).hash, '', 'the message left the address bar')
  t.ok(await other.isHidden('#app-view'), 'the console stays closed')
  t.same((await fresh.cookies(w.adminUrl)).filter((c) => c.name === 'keygate_session'), [], 'no session cookie')
  await other.screenshot({ path: `${SHOTS}sso-5-refused.png` })
  t.same(watchingOther.problems, [], 'no CSP violation on the refused page either')

  // a link anyone can write: the page shows keygate's own sentence, never the link's words
  const crafted = await fresh.newPage()
  await crafted.goto(`${w.adminUrl}/console/#sso_error=Your+account+is+locked.+Call+0800+123+456`)
  await crafted.locator('#sign-in-error').waitFor({ state: 'visible' })
  t.equal(await crafted.textContent('#sign-in-error'), 'Sign-in refused: the sign-in did not succeed; sign in again',
    'an unknown code: the general sentence')
  await crafted.close()

  t.same(watching.problems, [], 'no uncaught error, no CSP or Trusted Types violation')
  t.same(fromConsole.filter((u) => !u.startsWith(w.adminUrl + '/') && !u.startsWith(w.issuer + '/')), [], 'the console asked only the admin plane (and went to the provider)')
  t.same(watching.requests.filter((u) => u.includes(key)), [], 'no URL carried the key')
})

async function refusedAs (page: Page, issuer: string, login: string): Promise<void> {
  await page.click('[data-testid=sso-sign-in]')
  await page.waitForURL((u) => u.href.startsWith(issuer), { waitUntil: 'domcontentloaded' })
  await page.fill('input[name=login]', login)
  await page.fill('input[name=password]', 'any')
  await page.click('button[type=submit]')
  await page.locator('#sign-in-error').waitFor({ state: 'visible' })
}

async function waitGone (client: { keys: (p: string) => Promise<string[]> }, pattern: string): Promise<boolean> {
  for (let i = 0; i < 50; i++) {
    if ((await client.keys(pattern)).length === 0) return true
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return false
}
