/**
 * A personal key an org admin minted for another user gained that user's later
 * promotions: acme's org admin created a personal key for alice; after an admin
 * promoted alice to a `keygate:admin` role, the org admin's copy of her key signed in
 * to the admin API with `scope: admin`.
 *
 * A personal key acts as its user, with the user's role at each request, so only that
 * user or an admin mints one: the org admin's creation is refused (403), and no copy
 * exists to be promoted.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../helpers/gateway.js'

t.test('acme\'s org admin mints a personal key for alice, who is then promoted to keygate:admin', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'users:*', 'orgs:read'])
  await f.role('keyadmin', ['keygate:admin'])
  await f.user('oscar', 'acme', 'orgadmin')
  const oscar = await f.personalKey('oscar')

  const minted = await call(gw, 'POST', '/admin/v1/keys', oscar.key, { type: 'personal', user: 'alice', name: 'for alice' })
  if (minted.status === 201) {
    // what happened before: the copy follows alice's promotion
    await f.user('alice', 'acme', 'keyadmin')
    const copy = (minted.json() as { key: string }).key
    const session = await call(gw, 'GET', '/admin/v1/session', copy)
    t.fail(`the org admin's copy of alice's key signs in: ${session.status} ${JSON.stringify((session.json() as { scope?: string }).scope)}`)
  }
  t.equal(minted.status, 403, 'an org admin does not create a personal key for another user')
  t.match(minted.json(), { error: { code: 'forbidden', details: [{ field: 'user', reason: /acts as its user/ }] } })
  t.match(minted.headers['www-authenticate'], /insufficient_scope.*keygate:admin/, 'naming the scope that would allow it')
  t.same(await f.admin.listKeys({ user: 'alice' }), [], 'alice has no key')
  const refusals = (await f.admin.readRefusals({ limit: 100 })).entries
  t.ok(refusals.some((r) => r.action === 'key.create' && r.first.result.startsWith('denied: a personal key acts as its user')), 'the refused attempt is audited')

  // its own personal key, and alice's own through the admin, still work as before
  const own = await call(gw, 'POST', '/admin/v1/keys', oscar.key, { type: 'personal', name: 'laptop' })
  t.equal(own.status, 201, 'its own personal key: allowed')
  t.match(own.json(), { user: 'oscar', org: 'acme' })
})
