/**
 * GET /admin/v1/keys a page at a time (limit, cursor, q) and GET /admin/v1/usage/keys,
 * on a real Redis through the admin listener:
 * - every page of an org admin's listing, searched or not, holds its own org's keys
 *   only: walking every page gives exactly the org's keys, each once, in key id order,
 *   and another org's keys never appear through any page, search or cursor;
 * - a key indexed under an org whose record names another is not in that org's pages;
 * - a search that skips more keys than a page reads ends the page short, with a cursor;
 * - without limit or cursor the whole list comes at once (the CLI's listing);
 * - the batch usage read answers exactly the counts of the keys the caller may read,
 *   and leaves out the others (another org's, another user's, an unknown id).
 */
import t from 'tap'
import { adminCall as call, startGateway, type TestGateway } from '../../helpers/gateway.js'

const TOKEN = 'key-paging-admin-token-0123456789abcdef'
const ACME = 2300
const GLOBEX = 300

interface KeyView { id: string, org: string, name: string, user?: string, type: string }
interface Page { keys: KeyView[], next_cursor?: string }
interface Totals { allowed: number, refused: number, limited: number, errors: number }
interface KeysUsage { keys: Array<{ id: string, totals: Totals, points: Array<{ t: string } & Totals> }> }

/** Every page of a listing, following next_cursor: the keys and how many pages it took. */
async function walk (gw: TestGateway, credential: string, query: string): Promise<{ keys: KeyView[], pages: number, sizes: number[] }> {
  const keys: KeyView[] = []
  const sizes: number[] = []
  let cursor: string | undefined
  for (let pages = 1; ; pages++) {
    const res = await call(gw, 'GET', `/admin/v1/keys?${query}${cursor === undefined ? '' : `&cursor=${cursor}`}`, credential)
    if (res.status !== 200) throw new Error(`GET /keys?${query}: ${res.status} ${res.body}`)
    const page = res.json() as Page
    keys.push(...page.keys)
    sizes.push(page.keys.length)
    if (page.next_cursor === undefined) return { keys, pages, sizes }
    cursor = page.next_cursor
    if (pages > 200) throw new Error('no end of pages')
  }
}

const sorted = (ids: string[]): string[] => [...ids].sort()

t.test('keys a page at a time, searched, in the caller\'s scope only', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*'])
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])
  await f.user('oscar', 'acme', 'orgadmin')
  await f.user('sam', 'acme', 'selfreader')
  const orgAdmin = await f.personalKey('oscar', { name: 'oscar console' })
  const self = await f.personalKey('sam', { name: 'sam laptop' })
  const acmeIds = await f.bulkBotKeys('reader', 'acme', Array.from({ length: ACME }, (_, i) => i === 1234 ? 'Acme Needle exporter' : `acme bot ${i}`))
  const globexIds = await f.bulkBotKeys('reader', 'globex', Array.from({ length: GLOBEX }, (_, i) => i === 7 ? 'globex needle exporter' : `globex bot ${i}`))
  // indexed under acme, but its record says globex (an index edited by hand): not acme's
  const stray = await f.bulkBotKeys('reader', 'globex', ['stray needle'])
  await gw.client.sadd(f.keys.orgKeys('acme'), stray[0] as string)
  const acmeAll = sorted([...acmeIds, orgAdmin.id, self.id])
  const globexAll = new Set([...globexIds, ...stray])

  await t.test('an org admin walks every page of its org: each key once, in key id order, no other org\'s', async (t) => {
    const { keys, pages, sizes } = await walk(gw, orgAdmin.key, 'limit=100')
    t.equal(pages, Math.ceil(acmeAll.length / 100), 'pages of 100')
    t.ok(sizes.slice(0, -1).every((n) => n === 100), 'every page but the last is full')
    t.same(keys.map((k) => k.id), acmeAll, 'exactly the org\'s keys, in key id order')
    t.equal(keys.filter((k) => k.org !== 'acme' || globexAll.has(k.id)).length, 0, 'no key of globex')
  })

  await t.test('the default page is 100; 1000 is the most', async (t) => {
    const first = (await call(gw, 'GET', '/admin/v1/keys?org=acme&cursor=' + '0'.repeat(16), TOKEN)).json() as Page
    t.equal(first.keys.length, 100)
    t.type(first.next_cursor, 'string')
    t.equal(((await call(gw, 'GET', '/admin/v1/keys?limit=1000', TOKEN)).json() as Page).keys.length, 1000)
    const over = await call(gw, 'GET', '/admin/v1/keys?limit=1001', TOKEN)
    t.equal(over.status, 400)
    t.match(over.json(), { error: { details: [{ field: 'limit' }] } })
    t.equal((await call(gw, 'GET', '/admin/v1/keys?limit=0', TOKEN)).status, 400)
    t.equal((await call(gw, 'GET', '/admin/v1/keys?limit=10&cursor=not-a-key-id', TOKEN)).status, 400, 'a cursor is a key id')
    t.equal((await call(gw, 'GET', '/admin/v1/keys?org=acme&over_policy=true&limit=10', TOKEN)).status, 400, 'over_policy is not paged')
  })

  await t.test('a search finds its org\'s key only, case-insensitively, through every page', async (t) => {
    const found = await walk(gw, orgAdmin.key, 'limit=50&q=NEEDLE')
    t.same(found.keys.map((k) => k.id), [acmeIds[1234]], 'acme\'s needle, not globex\'s nor the stray record')
    t.ok(found.pages >= 2, `a search reads at most 2000 records a page, so ${ACME} keys take more than one (${found.pages})`)
    t.same((await walk(gw, orgAdmin.key, 'limit=50&q=globex')).keys, [], 'globex\'s names are not searchable by acme')
    t.same((await walk(gw, orgAdmin.key, `limit=50&q=${(globexIds[3] as string).slice(0, 12)}`)).keys, [], 'nor its key ids')
    t.same((await walk(gw, orgAdmin.key, 'limit=50&q=oscar')).keys.map((k) => k.id), [orgAdmin.id], 'by user')
    t.same((await walk(gw, orgAdmin.key, `limit=50&q=${(acmeIds[5] as string).toLowerCase()}`)).keys.map((k) => k.id), [acmeIds[5]], 'by key id, any case')
    const nothing = (await call(gw, 'GET', '/admin/v1/keys?limit=50&q=no-such-key', orgAdmin.key)).json() as Page
    t.same(nothing.keys, [])
    t.type(nothing.next_cursor, 'string', 'the first 2000 records read, the page ends short with a cursor')
    const admin = await walk(gw, TOKEN, 'limit=500&q=needle')
    t.same(sorted(admin.keys.map((k) => k.id)), sorted([acmeIds[1234] as string, globexIds[7] as string, stray[0] as string]), 'an admin finds every org\'s')
  })

  await t.test('an org admin asking for another org, or starting at its key, sees no other org\'s key', async (t) => {
    t.same((await call(gw, 'GET', '/admin/v1/keys?org=globex&limit=10', orgAdmin.key)).json(), { keys: [] })
    const after = (await call(gw, 'GET', `/admin/v1/keys?limit=1000&cursor=${globexIds[0] as string}`, orgAdmin.key)).json() as Page
    t.ok(after.keys.length > 0)
    t.ok(after.keys.every((k) => k.org === 'acme' && k.id > (globexIds[0] as string)), 'acme keys after that id, none of globex')
  })

  await t.test('a self principal pages through its own keys only', async (t) => {
    const own = await walk(gw, self.key, 'limit=1')
    t.same(own.keys.map((k) => k.id), [self.id])
    t.same((await walk(gw, self.key, 'limit=10&user=oscar')).keys, [], 'not another user\'s')
  })

  await t.test('an admin pages through every key', async (t) => {
    const { keys } = await walk(gw, TOKEN, 'limit=700')
    const all = (await gw.client.smembers(f.keys.keys)).sort()
    t.same(keys.map((k) => k.id), all)
  })

  await t.test('without limit or cursor, the whole list at once', async (t) => {
    const res = (await call(gw, 'GET', '/admin/v1/keys', orgAdmin.key)).json() as Page
    t.equal(res.next_cursor, undefined)
    t.same(res.keys.map((k) => k.id), acmeAll)
    const searched = (await call(gw, 'GET', '/admin/v1/keys?q=needle', orgAdmin.key)).json() as Page
    t.same(searched.keys.map((k) => k.id), [acmeIds[1234]], 'q filters the whole list too')
  })
})

t.test('several keys\' usage in one read, each in the caller\'s scope', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN }, yaml: 'usage: { flush_ms: 100 }' })
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'users:*'])
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])
  await f.user('oscar', 'acme', 'orgadmin')
  await f.user('sam', 'acme', 'selfreader')
  const orgAdmin = await f.personalKey('oscar')
  const sam = await f.personalKey('sam')
  const bot = await f.botKey('reader', 'acme')
  const globex = await f.botKey('reader', 'globex')
  for (let i = 0; i < 4; i++) await gw.get('/api/v1/users', bot.key)
  await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${bot.key}` })
  for (let i = 0; i < 3; i++) await gw.get('/api/v1/users', globex.key)
  for (let i = 0; i < 2; i++) await gw.get('/api/v1/users', sam.key)
  await gw.app.counter.flush()
  const unknown = 'Z'.repeat(16)
  const ids = [bot.id, globex.id, sam.id, unknown].join(',')
  const read = async (credential: string, query = ''): Promise<KeysUsage> => {
    const res = await call(gw, 'GET', `/admin/v1/usage/keys?ids=${ids}${query}`, credential)
    t.equal(res.status, 200, `GET /usage/keys${query}`)
    return res.json() as KeysUsage
  }
  const totals = (u: KeysUsage): Record<string, Totals> => Object.fromEntries(u.keys.map((k) => [k.id, k.totals]))
  const zero = { allowed: 0, refused: 0, limited: 0, errors: 0 }

  const asAdmin = await read(TOKEN)
  t.same(totals(asAdmin), {
    [bot.id]: { ...zero, allowed: 4, refused: 1 },
    [globex.id]: { ...zero, allowed: 3 },
    [sam.id]: { ...zero, allowed: 2 }
  }, 'an admin: every existing key, in the order asked; the unknown id is absent')
  t.same(asAdmin.keys.map((k) => k.id), [bot.id, globex.id, sam.id])
  t.equal(asAdmin.keys[0]?.points.length, 24, '24 points by the hour (the default range)')
  const single = (await call(gw, 'GET', `/admin/v1/keys/${bot.id}/usage`, TOKEN)).json() as { points: unknown[] }
  t.same(asAdmin.keys[0]?.points, single.points, 'the same points as the key\'s own usage read')

  t.same(Object.keys(totals(await read(orgAdmin.key))).sort(), [bot.id, sam.id].sort(), 'an org admin: its org\'s keys only')
  t.same(Object.keys(totals(await read(sam.key))), [sam.id], 'a self principal: its own key only')
  t.equal((await read(TOKEN, '&step=1m&from=2020-01-01T00:00:00Z&to=2020-01-01T01:00:00Z')).keys[0]?.points.length, 60, 'a range of its own')

  const many = Array.from({ length: 201 }, () => bot.id).join(',')
  t.equal((await call(gw, 'GET', `/admin/v1/usage/keys?ids=${many}`, TOKEN)).status, 400, 'at most 200 ids')
  t.equal((await call(gw, 'GET', `/admin/v1/usage/keys?ids=${bot.id},nope`, TOKEN)).status, 400, 'ids are key ids')
  const ten = Array.from({ length: 10 }, (_, i) => 'A'.repeat(15) + String(i)).join(',')
  const heavy = await call(gw, 'GET', `/admin/v1/usage/keys?ids=${ten}&step=1m&from=2020-01-01T00:00:00Z&to=2020-01-03T00:00:00Z`, TOKEN)
  t.equal(heavy.status, 400, 'ten keys of 2880 points: past the 20,000 points a batch answers')
  t.match(heavy.json(), { error: { details: [{ field: 'ids' }] } })
  t.equal((await call(gw, 'GET', `/admin/v1/usage/keys?ids=${bot.id}`)).status, 401, 'a credential, as every admin route')
})
