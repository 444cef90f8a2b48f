/**
 * Security review, finding 1: a key's `allowed_cidrs` were not applied on the admin
 * API. A superadmin key bound to 10.0.0.0/8 listed every org's users from 127.0.0.1,
 * and a bound self-service key removed its own binding (`restrict {"allowed_cidrs":
 * null}` on itself) and minted unbound keys.
 *
 * A key's addresses hold wherever the key is used: on the admin API as on the data
 * plane (the client a trusted proxy reports counts, as there). A principal signed in
 * with a key never widens that key's restrictions, and never mints a key wider than it:
 * addresses within its own, no scope removed from itself, no later expiry.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../helpers/gateway.js'

const FROM_10 = { 'X-Forwarded-For': '10.1.2.3' }
const DAY = 86_400_000

interface Created { id: string, key: string, allowed_cidrs?: string[], expires_at?: string }

t.test('a bound key is bound on the admin API too, and mints nothing wider', async (t) => {
  // the admin listener's peer (127.0.0.1) is a trusted proxy: X-Forwarded-For says who the client is
  const gw = await startGateway(t, { yaml: 'trusted_proxies: ["127.0.0.1"]\n' })
  const f = gw.fixtures
  await f.role('superadmin', ['keygate:admin'])
  await f.role('selfservice', ['keygate:keys:self', 'users:read'])
  await f.user('root', 'acme', 'superadmin')
  await f.user('sam', 'acme', 'selfservice')
  const { result: root } = await f.admin.createKey({ type: 'personal', user: 'root', allowedCidrs: ['10.0.0.0/8'] })
  const { result: sam } = await f.admin.createKey({
    type: 'personal', user: 'sam', allowedCidrs: ['10.0.0.0/8'], expiresInMs: 7 * DAY
  })

  await t.test('a superadmin key bound to 10/8 signs in from 10/8 only', async (t) => {
    const outside = await call(gw, 'GET', '/admin/v1/users', root.key)
    t.equal(outside.status, 403, 'from 127.0.0.1: refused')
    t.match(outside.json(), { error: { code: 'forbidden' } })
    t.match(await gw.logs.find((l) => l.req_id === outside.headers['x-request-id']), { reason: 'address_not_allowed' })
    t.equal((await call(gw, 'GET', '/admin/v1/users', root.key, undefined, FROM_10)).status, 200, 'from 10.1.2.3')
  })

  await t.test('a bound key does not lift or widen its own binding', async (t) => {
    const path = `/admin/v1/keys/${sam.id}/restrict`
    t.equal((await call(gw, 'POST', path, sam.key, { allowed_cidrs: null }, FROM_10)).status, 403, 'removed: refused')
    t.equal((await call(gw, 'POST', path, sam.key, { allowed_cidrs: ['0.0.0.0/0'] }, FROM_10)).status, 403,
      'widened: refused')
    const narrowed = await call(gw, 'POST', path, sam.key, { allowed_cidrs: ['10.1.0.0/16'] }, FROM_10)
    t.equal(narrowed.status, 200, 'narrowed: allowed')
    t.match((await call(gw, 'GET', `/admin/v1/keys/${sam.id}`, root.key, undefined, FROM_10)).json(),
      { allowed_cidrs: ['10.1.0.0/16'] })
    t.equal((await gw.get('/api/v1/users', sam.key)).status, 403, 'still bound on the data plane')
  })

  await t.test('a bound key mints keys within its addresses and its expiry', async (t) => {
    const made = await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'personal' }, FROM_10)
    t.equal(made.status, 201, 'no addresses asked: its own')
    const k = made.json() as Created
    t.same(k.allowed_cidrs, ['10.1.0.0/16'])
    t.ok(k.expires_at !== undefined && Date.parse(k.expires_at) <= Date.now() + 7 * DAY, 'expires with its maker')
    t.equal((await gw.get('/api/v1/users', k.key)).status, 403, 'the new key is bound on the data plane')

    const wide = await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'personal', allowed_cidrs: ['0.0.0.0/0'] },
      FROM_10)
    t.equal(wide.status, 403, 'wider addresses: refused')
    t.match(wide.json(), { error: { code: 'forbidden', details: [{ field: 'allowed_cidrs' }] } })
    const v6 = await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'personal', allowed_cidrs: ['::1'] }, FROM_10)
    t.equal(v6.status, 403, 'an address of another family: refused')
    const later = await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'personal', expires_in: '30d' }, FROM_10)
    t.equal(later.status, 400, 'a later expiry than its own: refused')
    t.match(later.json(), { error: { details: [{ field: 'expires_in' }] } })
    const within = await call(gw, 'POST', '/admin/v1/keys', sam.key,
      { type: 'personal', allowed_cidrs: ['10.1.2.0/24'], expires_in: '1d' }, FROM_10)
    t.equal(within.status, 201, 'narrower and sooner: allowed')
  })

  await t.test('a bound key rotates no key wider than itself into its hands', async (t) => {
    const unbound = await f.personalKey('sam')
    const rotated = await call(gw, 'POST', `/admin/v1/keys/${unbound.id}/rotate`, sam.key, {}, FROM_10)
    t.equal(rotated.status, 403)
    const own = await call(gw, 'POST', `/admin/v1/keys/${sam.id}/rotate`, sam.key, {}, FROM_10)
    t.equal(own.status, 201, 'its own key: as bound as itself')
    t.same((own.json() as Created).allowed_cidrs, ['10.1.0.0/16'])
  })

  await t.test('a scoped key does not lift its own scope', async (t) => {
    const { result: scoped } = await f.admin.createKey({
      type: 'personal', user: 'sam', scope: ['keygate:keys:self']
    })
    const lifted = await call(gw, 'POST', `/admin/v1/keys/${scoped.id}/restrict`, scoped.key, { scope: null })
    t.equal(lifted.status, 403)
    const key = (await call(gw, 'GET', `/admin/v1/keys/${scoped.id}`, root.key, undefined, FROM_10)).json()
    t.match(key, { scope: ['keygate:keys:self'] }, 'unchanged')
  })

  await t.test('the admin token and an unbound admin restrict any key as before', async (t) => {
    const { result: unboundRoot } = await f.admin.createKey({ type: 'personal', user: 'root' })
    t.equal((await call(gw, 'POST', `/admin/v1/keys/${sam.id}/restrict`, unboundRoot.key,
      { allowed_cidrs: null })).status, 200)
  })
})
