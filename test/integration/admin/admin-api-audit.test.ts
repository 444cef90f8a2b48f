/**
 * GET /admin/v1/audit and /admin/v1/audit/refusals: pages, newest first, with an
 * opaque cursor; `since` and `limit`; who reads what:
 *
 *   admin (token or keygate:admin)   every entry
 *   keygate:org:admin                 the entries whose org is its own
 *   anyone else                       403, before the query is read
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../../helpers/gateway.js'

const TOKEN = 'audit-admin-token-0123456789abcdef'

interface Entry { id: string, action: string, target: string, org?: string, result: string }
interface Page<T> { entries: T[], next_cursor?: string }
interface Refusal { minute: string, actor: string, action: string, org?: string, count: number }

t.test('the audit routes', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  await f.role('orgadmin', ['users:read', 'keygate:keys:self', 'keygate:org:admin'])
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])
  await f.user('olga', 'acme', 'orgadmin')
  await f.user('sam', 'acme', 'selfreader')
  const olga = await f.personalKey('olga')
  const sam = await f.personalKey('sam')
  const acmeBot = await f.botKey('reader', 'acme')
  const globexBot = await f.botKey('reader', 'globex')
  await f.admin.revokeKey(globexBot.id)
  await f.admin.revokeKey(acmeBot.id)

  const page = async <T>(path: string, cred = TOKEN): Promise<Page<T>> => {
    const res = await call(gw, 'GET', path, cred)
    t.equal(res.status, 200, path)
    return res.json() as Page<T>
  }

  await t.test('pages, newest first, until next_cursor is absent', async (t) => {
    const all = (await f.admin.readAudit()).reverse()
    t.ok(all.length > 10)
    const seen: Entry[] = []
    let cursor: string | undefined
    let pages = 0
    do {
      const p: Page<Entry> = await page(`/admin/v1/audit?limit=3${cursor === undefined ? '' : `&cursor=${cursor}`}`)
      t.ok(p.entries.length <= 3)
      seen.push(...p.entries)
      cursor = p.next_cursor
      pages++
    } while (cursor !== undefined && pages < 100)
    t.same(seen.map((e) => e.id), all.map((e) => e.id), 'every entry once, newest first')
    t.equal(pages, Math.ceil(all.length / 3))
    const first = await page<Entry>('/admin/v1/audit')
    t.equal(first.entries.length, Math.min(all.length, 100), 'default limit 100')
    t.same((await page<Entry>('/admin/v1/audit?since=1h&limit=1000')).entries.length, all.length)
  })

  await t.test('changes carry the org of the object they concern', async (t) => {
    const entries = (await page<Entry>('/admin/v1/audit?limit=1000')).entries
    t.match(entries.find((e) => e.action === 'key.revoke' && e.target === `key:${globexBot.id}`), { org: 'globex', result: 'ok' })
    t.match(entries.find((e) => e.action === 'user.put' && e.target === 'user:olga'), { org: 'acme' })
    t.equal(entries.find((e) => e.action === 'role.put')?.org, undefined, 'roles belong to no org')
  })

  await t.test('bad paging parameters: 400', async (t) => {
    for (const q of ['limit=0', 'limit=1001', 'limit=x', 'cursor=abc', 'cursor=1-2-3', 'since=0s']) {
      t.equal((await call(gw, 'GET', `/admin/v1/audit?${q}`, TOKEN)).status, 400, q)
    }
  })

  await t.test('an org admin reads its own org\'s entries only; a self key gets 403', async (t) => {
    const mine = (await page<Entry>('/admin/v1/audit?limit=1000', olga.key)).entries
    t.ok(mine.length > 0)
    t.ok(mine.every((e) => e.org === 'acme'), 'only acme')
    t.ok(mine.some((e) => e.target === `key:${acmeBot.id}` && e.action === 'key.revoke'))
    t.notOk(mine.some((e) => e.target === `key:${globexBot.id}`), 'nothing of globex')
    const paged: Entry[] = []
    let cursor: string | undefined
    do {
      const p: Page<Entry> = await page(`/admin/v1/audit?limit=2${cursor === undefined ? '' : `&cursor=${cursor}`}`, olga.key)
      paged.push(...p.entries)
      cursor = p.next_cursor
    } while (cursor !== undefined)
    t.same(paged.map((e) => e.id), mine.map((e) => e.id), 'filtered pages too')
    for (const path of ['/admin/v1/audit', '/admin/v1/audit/refusals', '/admin/v1/audit?limit=bogus']) {
      const res = await call(gw, 'GET', path, sam.key)
      t.equal(res.status, 403, `${path}: self`)
      t.equal(res.headers['www-authenticate'], 'Bearer realm="keygate", error="insufficient_scope", scope="keygate:org:admin"', 'the challenge names the least scope that reads the trail')
    }
  })

  await t.test('refusals: aggregated, paged, readable by admins and by the org admin for its org', async (t) => {
    // sam tries to revoke a globex key and an acme key that are not its own: 404 each, counted
    for (let i = 0; i < 3; i++) t.equal((await call(gw, 'POST', `/admin/v1/keys/${globexBot.id}/revoke`, sam.key)).status, 404)
    t.equal((await call(gw, 'POST', `/admin/v1/keys/${acmeBot.id}/revoke`, sam.key)).status, 404)
    for (let i = 0; i < 2; i++) t.equal((await call(gw, 'DELETE', '/admin/v1/roles/ghost', TOKEN)).status, 404)
    const all = (await page<Refusal>('/admin/v1/audit/refusals?since=1h')).entries
    const byKey = (org: string | undefined): Refusal[] => all.filter((r) => r.actor === `key:${sam.id}` && r.org === org)
    // (counted under the caller's own org: globex's admins learn nothing of acme's keys)
    t.equal(byKey('globex').reduce((n, r) => n + r.count, 0), 0)
    t.equal(byKey('acme').reduce((n, r) => n + r.count, 0), 4)
    t.equal(all.filter((r) => r.actor === 'admin-token' && r.action === 'role.delete').reduce((n, r) => n + r.count, 0), 2)
    const paged: Refusal[] = []
    let cursor: string | undefined
    do {
      const p: Page<Refusal> = await page(`/admin/v1/audit/refusals?limit=1${cursor === undefined ? '' : `&cursor=${cursor}`}`)
      t.ok(p.entries.length <= 1)
      paged.push(...p.entries)
      cursor = p.next_cursor
    } while (cursor !== undefined)
    t.same(paged, all, 'one at a time, the same aggregates')
    const olgas = (await page<Refusal>('/admin/v1/audit/refusals', olga.key)).entries
    t.ok(olgas.length > 0 && olgas.every((r) => r.org === 'acme'), 'the org admin sees its own org\'s only')
  })
})
