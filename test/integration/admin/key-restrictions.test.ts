/**
 * Setting a key's scope and addresses through the admin API (create, and POST
 * /admin/v1/keys/{id}/restrict): the grammar and the CIDRs are checked with every bad
 * entry named (400); no principal sets a scope beyond its own grants (403); an org
 * admin restricts its org's keys (another org's: 404); a self principal makes and
 * restricts its own; a principal whose own key is scoped makes personal keys no wider;
 * and a rotation carries type, org, role, scope, addresses, rate limit and name.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../../helpers/gateway.js'

const TOKEN = 'test-admin-token-0123456789abcdef'

interface Created { id: string, key: string, scope?: string[], allowed_cidrs?: string[] }

t.test('scope and addresses through the admin API', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*', 'orgs:read'])
  await f.role('selfreader', ['users:read', 'orgs:read', 'keygate:keys:self'])
  await f.user('oscar', 'acme', 'orgadmin')
  await f.user('sam', 'acme', 'selfreader')
  const oscar = (await f.personalKey('oscar')).key
  const sam = (await f.personalKey('sam')).key

  await t.test('an admin creates a scoped, address-bound key; views show both', async (t) => {
    const res = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'writer', org: 'acme', scope: ['users:read'], allowed_cidrs: ['127.0.0.1/32', '::1'] })
    t.equal(res.status, 201)
    const k = res.json() as Created
    t.same(k.scope, ['users:read'])
    t.same(k.allowed_cidrs, ['127.0.0.1/32', '::1'])
    t.match((await call(gw, 'GET', `/admin/v1/keys/${k.id}`, TOKEN)).json(), { scope: ['users:read'], allowed_cidrs: ['127.0.0.1/32', '::1'] })
    const listed = (await call(gw, 'GET', '/admin/v1/keys?org=acme', TOKEN)).json() as { keys: Created[] }
    t.match(listed.keys.find((x) => x.id === k.id), { scope: ['users:read'], allowed_cidrs: ['127.0.0.1/32', '::1'] })
    t.equal((await gw.get('/api/v1/users', k.key)).status, 200)
    t.equal((await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${k.key}` }, '{}')).status, 403, 'writer narrowed to users:read')
  })

  await t.test('a bad permission or address: 400, each named', async (t) => {
    const res = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'personal', user: 'alice', scope: ['users:read', 'USERS:WRITE'], allowed_cidrs: ['10.0.0.0/8', '10.0.0.0/40', 'example.com'] })
    t.equal(res.status, 400)
    const details = (res.json() as { error: { details: Array<{ field: string, reason: string }> } }).error.details
    t.same(details.map((d) => d.field), ['scope', 'allowed_cidrs', 'allowed_cidrs'])
    t.match(details[0]?.reason, /USERS:WRITE/)
    t.match(details[2]?.reason, /example\.com/)
    t.equal((await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'personal', user: 'alice', scope: [] })).status, 400, 'an empty scope')
  })

  await t.test('no scope beyond the caller\'s own grants', async (t) => {
    const beyond = await call(gw, 'POST', '/admin/v1/keys', oscar, { type: 'bot', role: 'reader', scope: ['billing:read'] })
    t.equal(beyond.status, 403, 'an org admin: billing:read is not its own')
    t.match(beyond.json(), { error: { code: 'forbidden', details: [{ field: 'scope' }] } })
    t.equal((await call(gw, 'POST', '/admin/v1/keys', oscar, { type: 'bot', role: 'reader', scope: ['users:read'] })).status, 201, 'within: 201')
    t.equal((await call(gw, 'POST', '/admin/v1/keys', sam, { type: 'personal', scope: ['users:*'] })).status, 403, 'self: users:* is wider than users:read')
    const own = await call(gw, 'POST', '/admin/v1/keys', sam, { type: 'personal', scope: ['users:read'], allowed_cidrs: ['127.0.0.1'] })
    t.equal(own.status, 201, 'self: a scoped, address-bound key for itself')
    t.same((own.json() as Created).scope, ['users:read'])
  })

  await t.test('a principal whose own key is scoped makes personal keys no wider', async (t) => {
    const { result: narrow } = await f.admin.createKey({
      type: 'personal',
      user: 'sam',
      scope: ['keygate:keys:self', 'users:read']
    })
    const made = await call(gw, 'POST', '/admin/v1/keys', narrow.key, { type: 'personal' })
    t.equal(made.status, 201)
    const k = made.json() as Created
    t.same(k.scope?.slice().sort(), ['keygate:keys:self', 'users:read'], 'its own scope, not its user\'s whole role')
    t.equal((await gw.get('/api/v1/orgs/acme/x', k.key)).status, 403, 'orgs:read, in the role but not the scope, stays out')
    const rotated = await call(gw, 'POST', `/admin/v1/keys/${(await f.personalKey('sam')).id}/rotate`, narrow.key, {})
    t.equal(rotated.status, 403, 'nor rotates a key wider than itself into its hands')
  })

  await t.test('restrict: an org admin its org\'s keys, personal ones included; another org\'s: 404', async (t) => {
    const alices = await f.personalKey('alice')
    const carols = await f.personalKey('carol')
    const ok = await call(gw, 'POST', `/admin/v1/keys/${alices.id}/restrict`, oscar, { scope: ['users:read'], allowed_cidrs: ['10.0.0.0/8'] })
    t.equal(ok.status, 200)
    t.same(ok.json(), { id: alices.id, changed: true })
    t.equal((await gw.get('/api/v1/users', alices.key)).status, 403, 'bound to 10/8: refused from 127.0.0.1')
    t.equal((await call(gw, 'POST', `/admin/v1/keys/${alices.id}/restrict`, oscar, { allowed_cidrs: null })).status, 200, 'addresses removed')
    t.equal((await gw.get('/api/v1/users', alices.key)).status, 200)
    t.equal((await call(gw, 'POST', `/admin/v1/keys/${carols.id}/restrict`, oscar, { scope: ['orgs:read'] })).status, 404, 'globex: as if missing')
    t.equal((await call(gw, 'POST', `/admin/v1/keys/${alices.id}/restrict`, oscar, { scope: ['billing:read'] })).status, 403, 'a scope beyond its grants')
    t.equal((await call(gw, 'POST', `/admin/v1/keys/${alices.id}/restrict`, sam, { scope: ['users:read'] })).status, 404, 'self: not its key')
    t.equal((await call(gw, 'POST', `/admin/v1/keys/${alices.id}/restrict`, TOKEN, { allowed_cidrs: ['300.0.0.0/8'] })).status, 400)
    t.equal((await call(gw, 'POST', `/admin/v1/keys/${alices.id}/restrict`, TOKEN, { scope: null })).status, 200, 'the admin removes the scope')
    t.notOk('scope' in ((await call(gw, 'GET', `/admin/v1/keys/${alices.id}`, TOKEN)).json() as object), 'no scope shown')
    const audit = (await call(gw, 'GET', '/admin/v1/audit?since=1h', TOKEN)).json() as { entries: Array<{ action: string, target: string }> }
    t.ok(audit.entries.some((e) => e.action === 'key.restrict' && e.target === `key:${alices.id}`), 'audited')
  })

  await t.test('a rotation carries type, org, role, scope, addresses, rate limit and name', async (t) => {
    const old = (await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'writer', org: 'acme', name: 'ci', rate_limit: '50/1m', scope: ['users:read'], allowed_cidrs: ['127.0.0.0/8'] })).json() as Created
    const rotated = await call(gw, 'POST', `/admin/v1/keys/${old.id}/rotate`, TOKEN, {})
    t.equal(rotated.status, 201)
    t.match(rotated.json(), { type: 'bot', org: 'acme', role: 'writer', name: 'ci', rate_limit: '50/1m', scope: ['users:read'], allowed_cidrs: ['127.0.0.0/8'] })
    const fresh = (rotated.json() as Created).key
    t.equal((await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${fresh}` }, '{}')).status, 403, 'the new key is as narrow')
    const p = (await call(gw, 'POST', '/admin/v1/keys', sam, { type: 'personal', scope: ['users:read'], allowed_cidrs: ['::1'] })).json() as Created
    const own = await call(gw, 'POST', `/admin/v1/keys/${p.id}/rotate`, sam, {})
    t.equal(own.status, 201, 'self rotates its own personal key')
    t.match(own.json(), { type: 'personal', user: 'sam', org: 'acme', scope: ['users:read'], allowed_cidrs: ['::1'] })
  })
})
