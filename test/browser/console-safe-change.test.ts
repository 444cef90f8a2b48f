/**
 * Safe change in the console (docs/safe-change.md, docs/test-keys.md), in a real
 * headless Chromium against a whole gateway: Generate New Key offers the environment
 * (live by default, or test); a test key's secret has the test prefix and its row is
 * marked `test`, a live one's says live; a key's shadow restriction shows in its row,
 * and "Would refuse" reads the count and the recent examples (method, path without
 * the query, reason, time); a key's usage chart names its environment. The strict CSP
 * is never violated.
 */
import t from 'tap'
import { eventually, startGateway } from '../helpers/gateway.js'
import { launchChromium, openContext, watch } from './chromium.js'

t.test('environment at creation, env in the list, shadow restrictions', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  await f.role('keygate-admin', ['keygate:admin'])
  await f.user('root', 'acme', 'keygate-admin')
  const root = await f.personalKey('root')
  const alice = await f.personalKey('alice', { name: 'alice laptop' })
  await f.admin.shadowRestrictKey(alice.id, { allowedCidrs: ['10.0.0.0/8'] })
  const seen = await eventually(async () => {
    const res = await gw.get('/api/v1/users?q=hidden-query', alice.key)
    return res.status === 200 && (await gw.logOf(res))?.shadow !== undefined
  }, 3000)
  t.ok(seen >= 0, 'the gateway tries the shadow restriction')
  await gw.app.shadowRefusals.flush()

  const browser = await launchChromium(t)
  const context = await openContext(t, browser, { viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const w = watch(page)
  await page.goto(`http://127.0.0.1:${gw.adminPort}/console`)
  await page.fill('#sign-in-key', root.key)
  await page.click('#sign-in-submit')
  await page.locator('#keys-body tr').first().waitFor()

  await page.click('#generate-open')
  t.ok(await page.isChecked('input[name=env][value=live]'), 'live is the default')
  await page.check('input[name=type][value=personal]')
  await page.check('input[name=env][value=test]')
  await page.fill('#generate-name', 'sandbox client')
  await page.click('#generate-submit')
  const display = page.locator('[data-testid=new-key]')
  await display.waitFor({ state: 'visible' })
  const secret = await display.inputValue()
  t.match(secret, /^kgt_/, 'a test key has the test prefix')
  t.match(await page.textContent('#reveal-facts'), /Environmenttest/)
  const id = await page.locator('#reveal-facts dd').first().textContent() ?? ''
  await page.click('#reveal-done')

  const testRow = page.locator(`tr[data-key-id="${id}"]`)
  await testRow.waitFor()
  t.equal(await testRow.locator('[data-testid=key-env]').getAttribute('data-env'), 'test', 'the list marks the test key')
  t.match(await testRow.locator('[data-testid=key-env]').textContent(), /test/)
  const liveRow = page.locator(`tr[data-key-id="${alice.id}"]`)
  t.equal(await liveRow.locator('[data-testid=key-env]').getAttribute('data-env'), 'live', 'a live key says live')

  const shadow = liveRow.locator('[data-testid=key-shadow]')
  t.match(await shadow.textContent(), /shadow \(not enforced\).*10\.0\.0\.0\/8/)
  await shadow.locator('[data-action=shadow-refused]').click()
  await shadow.locator('[data-testid=shadow-example]').first().waitFor()
  t.ok(Number(await shadow.locator('[data-count]').getAttribute('data-count')) >= 1, 'the would-refuse count')
  const example = await shadow.locator('[data-testid=shadow-example]').first().textContent() ?? ''
  t.match(example, /GET \/api\/v1\/users address_not_allowed/, 'an example: method, path, reason')
  t.notMatch(example, /hidden-query/, 'never the query string')
  t.equal(await testRow.locator('[data-testid=key-shadow]').count(), 0, 'a key without one shows none')
  await testRow.locator('[data-action=usage]').click()
  await page.locator('#usage-env').waitFor({ state: 'visible' })
  t.equal(await page.textContent('#usage-env'), 'test key', 'the usage chart names the key\'s environment')
  t.same(w.problems, [], 'no CSP violation, no page error')
})
