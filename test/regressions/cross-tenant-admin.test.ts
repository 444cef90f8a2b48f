/**
 * Administration is scoped, and no wildcard makes an administrator.
 *
 * The bug: `*` granted `keygate:admin`, and nothing on the admin plane looked at the
 * principal's org, so a personal key of an acme user whose role was `*` could create a
 * personal key for a globex user (and act as them), rewrite every org's roles,
 * deactivate other orgs' users and read every org's keys.
 *
 * Now `keygate:` permissions are granted by name only, and `keygate:org:admin` keeps a
 * principal inside its own org and its own permissions. The matrix below is every
 * admin route, for every kind of principal, against an object of acme (the principals'
 * org) and one of globex. Each cell runs on the same registry (restored after every
 * cell); after every refusal the registry is exactly as before.
 */
import t from 'tap'
import { Grants } from '../../src/registry/records.js'
import { adminCall as call, startGateway, type TestGateway } from '../helpers/gateway.js'

const TOKEN = 'test-admin-token-0123456789abcdef'

t.test('no wildcard grants a keygate: permission; names do', async (t) => {
  const cases: Array<[string[], string, boolean]> = [
    [['*'], 'keygate:admin', false],
    [['*'], 'keygate:org:admin', false],
    [['*'], 'keygate:keys:self', false],
    [['*'], 'users:read', true],
    [['keygate:*'], 'keygate:admin', false],
    [['keygate:*'], 'keygate:org:admin', false],
    [['keygate:admin'], 'keygate:admin', true],
    [['keygate:admin'], 'keygate:org:admin', false],
    [['keygate:org:admin'], 'keygate:org:admin', true],
    [['users:*'], 'users:write', true],
    [['users:*'], 'keygate:admin', false]
  ]
  for (const [granted, wanted, expected] of cases) {
    t.equal(new Grants(granted).has(wanted), expected, `${granted.join(' ')} ${expected ? 'grants' : 'does not grant'} ${wanted}`)
  }
})

t.test('a route rule requiring a keygate: permission is met by name only', async (t) => {
  const gw = await startGateway(t, {
    yaml: 'rules:\n  - { method: GET, path: /api/v1/ops, permissions: [keygate:admin] }\n  - { method: GET, path: /api/v1/users, permissions: [users:read] }\n'
  })
  await gw.fixtures.role('keyadmin', ['keygate:admin'])
  const star = await gw.fixtures.botKey('admin', 'acme')
  const named = await gw.fixtures.botKey('keyadmin', 'acme')
  t.equal((await gw.get('/api/v1/ops', star.key)).status, 403, '* does not meet keygate:admin')
  t.equal((await gw.get('/api/v1/users', star.key)).status, 200, '* still meets users:read')
  t.equal((await gw.get('/api/v1/ops', named.key)).status, 200, 'keygate:admin by name does')
})

type Who = 'token' | 'adminKey' | 'orgAdmin' | 'self' | 'star' | 'starBot'
const WHO: Who[] = ['token', 'adminKey', 'orgAdmin', 'self', 'star', 'starBot']

interface Route { name: string, method: string, path: (o: Objects) => string, body?: (o: Objects) => unknown }
/** the objects of one org that a route is aimed at */
interface Objects { org: string, user: string, keyId: string, role: string }

const ROUTES: Route[] = [
  { name: 'keys list', method: 'GET', path: (o) => `/admin/v1/keys?org=${o.org}` },
  { name: 'keys create personal', method: 'POST', path: () => '/admin/v1/keys', body: (o) => ({ type: 'personal', user: o.user }) },
  { name: 'keys create bot', method: 'POST', path: () => '/admin/v1/keys', body: (o) => ({ type: 'bot', role: 'reader', org: o.org }) },
  { name: 'keys show', method: 'GET', path: (o) => `/admin/v1/keys/${o.keyId}` },
  { name: 'keys revoke', method: 'POST', path: (o) => `/admin/v1/keys/${o.keyId}/revoke` },
  { name: 'keys rotate', method: 'POST', path: (o) => `/admin/v1/keys/${o.keyId}/rotate`, body: () => ({}) },
  { name: 'keys restrict', method: 'POST', path: (o) => `/admin/v1/keys/${o.keyId}/restrict`, body: () => ({ scope: ['users:read'], allowed_cidrs: ['10.0.0.0/8'] }) },
  { name: 'users list', method: 'GET', path: (o) => `/admin/v1/users?org=${o.org}` },
  { name: 'users show', method: 'GET', path: (o) => `/admin/v1/users/${o.user}` },
  { name: 'users put', method: 'PUT', path: (o) => `/admin/v1/users/${o.user}`, body: (o) => ({ org: o.org, role: 'reader', name: 'renamed' }) },
  { name: 'users deactivate', method: 'POST', path: (o) => `/admin/v1/users/${o.user}/deactivate` },
  { name: 'users activate', method: 'POST', path: (o) => `/admin/v1/users/${o.user}/activate` },
  { name: 'roles list', method: 'GET', path: () => '/admin/v1/roles' },
  { name: 'roles put', method: 'PUT', path: (o) => `/admin/v1/roles/${o.role}`, body: () => ({ permissions: ['*'] }) },
  { name: 'roles delete', method: 'DELETE', path: (o) => `/admin/v1/roles/${o.role}?force=true` },
  { name: 'audit', method: 'GET', path: () => '/admin/v1/audit?since=1h' },
  { name: 'audit refusals', method: 'GET', path: () => '/admin/v1/audit/refusals?since=1h' },
  { name: 'permissions', method: 'GET', path: () => '/admin/v1/permissions' },
  { name: 'session', method: 'GET', path: () => '/admin/v1/session' }
]

/**
 * Expected status per cell, `<acme> <globex>`. Principals (all in acme):
 *   token     the admin token
 *   adminKey  a personal key, role keygate:admin
 *   orgAdmin  a personal key, role keygate:org:admin keygate:keys:self users:* orgs:read
 *   self      a personal key, role users:read keygate:keys:self (sam; alice's and carol's keys are not its own)
 *   star      a personal key, role *  (no admin scope at all)
 *   starBot   a BOT key, role *       (no admin scope at all)
 * The key objects are personal keys of alice (acme) and carol (globex): an org admin
 * never creates or rotates a personal key of another user (403), but restricts its
 * org's (200), and another org's user or key answers 404 first, but for a user put
 * naming another org, which answers 403 whether or not the user exists; a self
 * principal does not see another user's keys (404). Its BOT key powers are in the test below.
 * The audit routes address no object: an org admin reads its own org's entries there
 * (which entries it sees is tested in test/integration/admin/admin-api-audit.test.ts).
 */
const EXPECTED = `
route                 token     adminKey  orgAdmin  self      star      starBot
keys list             200 200   200 200   200 200   200 200   403 403   403 403
keys create personal  201 201   201 201   403 404   403 403   403 403   403 403
keys create bot       201 201   201 201   201 403   201 403   403 403   403 403
keys show             200 200   200 200   200 404   404 404   403 403   403 403
keys revoke           200 200   200 200   200 404   404 404   403 403   403 403
keys rotate           201 201   201 201   403 404   404 404   403 403   403 403
keys restrict         200 200   200 200   200 404   404 404   403 403   403 403
users list            200 200   200 200   200 200   403 403   403 403   403 403
users show            200 200   200 200   200 404   404 404   403 403   403 403
users put             200 200   200 200   200 403   403 403   403 403   403 403
users deactivate      200 200   200 200   200 404   403 403   403 403   403 403
users activate        200 200   200 200   200 404   403 403   403 403   403 403
roles list            200 200   200 200   200 200   200 200   403 403   403 403
roles put             200 200   200 200   403 403   403 403   403 403   403 403
roles delete          200 200   200 200   403 403   403 403   403 403   403 403
audit                 200 200   200 200   200 200   403 403   403 403   403 403
audit refusals        200 200   200 200   200 200   403 403   403 403   403 403
permissions           200 200   200 200   403 403   403 403   403 403   403 403
session               200 200   200 200   200 200   200 200   403 403   403 403
`

/** the table's rows: route name -> `<acme> <globex>` per principal, in WHO's order */
const ROWS = new Map(EXPECTED.trim().split('\n').slice(1).map((line) => {
  const [name = '', ...cells] = line.split(/ {2,}/)
  return [name, cells]
}))

/** Every registry record and index set, as text (not the audit trail or the usage hash, which a refusal may write). */
async function dump (gw: TestGateway): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const key of (await gw.client.keys(`${gw.prefix}*`)).sort()) {
    if (written(gw, key)) continue
    const type = await gw.client.type(key)
    if (type === 'hash') out[key] = JSON.stringify(Object.entries(await gw.client.hgetall(key)).sort())
    else if (type === 'set') out[key] = JSON.stringify((await gw.client.smembers(key)).sort())
    else out[key] = type
  }
  return out
}

/** The keys a refusal may write: the audit trail (changes and refusal aggregates) and the usage hash. */
function written (gw: TestGateway, key: string): boolean {
  return key.startsWith(`${gw.prefix}audit`) || key === `${gw.prefix}usage`
}

type Snapshot = Map<string, Buffer>

async function snapshot (gw: TestGateway): Promise<Snapshot> {
  const snap: Snapshot = new Map()
  for (const key of await gw.client.keys(`${gw.prefix}*`)) {
    if (written(gw, key)) continue
    const value = await gw.client.dumpBuffer(key)
    if (value !== null) snap.set(key, value)
  }
  return snap
}

async function restore (gw: TestGateway, snap: Snapshot): Promise<void> {
  for (const key of await gw.client.keys(`${gw.prefix}*`)) {
    if (!snap.has(key) && !written(gw, key)) await gw.client.del(key)
  }
  for (const [key, value] of snap) await gw.client.restore(key, 0, value, 'REPLACE')
}

t.test('the cross-tenant matrix: every admin route, every principal, an acme and a globex object', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  await f.role('keyadmin', ['keygate:admin'])
  await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*', 'orgs:read'])
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])
  await f.role('spare-acme', ['users:read'])
  await f.role('spare-globex', ['users:read'])
  await f.user('dora', 'acme', 'keyadmin')
  await f.user('oscar', 'acme', 'orgadmin')
  await f.user('sam', 'acme', 'selfreader')
  await f.user('stella', 'acme', 'admin')
  const credential: Record<Who, string> = {
    token: TOKEN,
    adminKey: (await f.personalKey('dora')).key,
    orgAdmin: (await f.personalKey('oscar')).key,
    self: (await f.personalKey('sam')).key,
    star: (await f.personalKey('stella')).key,
    starBot: (await f.botKey('admin', 'acme')).key
  }
  const acme: Objects = { org: 'acme', user: 'alice', keyId: (await f.personalKey('alice')).id, role: 'spare-acme' }
  const globex: Objects = { org: 'globex', user: 'carol', keyId: (await f.personalKey('carol')).id, role: 'spare-globex' }
  const world = await snapshot(gw)

  t.same([...ROWS.keys()], ROUTES.map((r) => r.name), 'one row per route')
  for (const route of ROUTES) {
    const row = ROWS.get(route.name) ?? []
    t.equal(row.length, WHO.length, `${route.name}: one cell per principal`)
    await t.test(route.name, async (t) => {
      for (const [i, who] of WHO.entries()) {
        const [forAcme, forGlobex] = (row[i] ?? '').split(' ').map(Number)
        for (const [objects, status] of [[acme, forAcme], [globex, forGlobex]] as const) {
          await restore(gw, world)
          const before = await dump(gw)
          const res = await call(gw, route.method, route.path(objects), credential[who], route.body?.(objects))
          t.equal(res.status, status, `${who} on ${objects.org}`)
          if (res.status >= 400) t.same(await dump(gw), before, `${who} on ${objects.org}: the registry is unchanged`)
        }
      }
    })
  }
  await restore(gw, world)

  await t.test('listings never show another org to an org admin', async (t) => {
    const keys = (await call(gw, 'GET', '/admin/v1/keys', credential.orgAdmin)).json() as { keys: Array<{ org: string }> }
    t.ok(keys.keys.length > 0)
    t.ok(keys.keys.every((k) => k.org === 'acme'), 'unfiltered: acme keys only')
    t.same((await call(gw, 'GET', '/admin/v1/keys?org=globex', credential.orgAdmin)).json(), { keys: [] })
    t.same((await call(gw, 'GET', `/admin/v1/keys?user=${globex.user}`, credential.orgAdmin)).json(), { keys: [] }, 'a globex user\'s keys: none')
    const users = (await call(gw, 'GET', '/admin/v1/users', credential.orgAdmin)).json() as { users: Array<{ org: string }> }
    t.ok(users.users.length > 0)
    t.ok(users.users.every((u) => u.org === 'acme'), 'unfiltered: acme users only')
    t.same((await call(gw, 'GET', '/admin/v1/users?org=globex', credential.orgAdmin)).json(), { users: [] })
  })

  await t.test('another org\'s object answers exactly as a missing one', async (t) => {
    const foreign = await call(gw, 'GET', `/admin/v1/keys/${globex.keyId}`, credential.orgAdmin)
    const missing = await call(gw, 'GET', '/admin/v1/keys/AAAAAAAAAAAAAAAA', credential.orgAdmin)
    t.equal(foreign.status, 404)
    t.same(foreign.body, missing.body)
    const foreignUser = await call(gw, 'GET', '/admin/v1/users/carol', credential.orgAdmin)
    t.same(foreignUser.body, (await call(gw, 'GET', '/admin/v1/users/nobody', credential.orgAdmin)).body)
  })

  await t.test('an org admin stays within its org and its own permissions', async (t) => {
    const o = credential.orgAdmin
    const refused: Array<[string, string, string, unknown, number]> = [
      ['a user of another org moved into its own', 'PUT', '/admin/v1/users/carol', { org: 'acme', role: 'reader' }, 404],
      ['a new user in another org', 'PUT', '/admin/v1/users/newcomer', { org: 'globex', role: 'reader' }, 403],
      ['its own user moved out to another org', 'PUT', '/admin/v1/users/alice', { org: 'globex', role: 'reader' }, 403],
      ['a user given keygate:admin', 'PUT', '/admin/v1/users/alice', { org: 'acme', role: 'keyadmin' }, 403],
      ['a user given *', 'PUT', '/admin/v1/users/alice', { org: 'acme', role: 'admin' }, 403],
      ['a user given a missing role', 'PUT', '/admin/v1/users/alice', { org: 'acme', role: 'ghost' }, 403],
      ['a BOT key with keygate:admin', 'POST', '/admin/v1/keys', { type: 'bot', role: 'keyadmin' }, 403],
      ['a BOT key with *', 'POST', '/admin/v1/keys', { type: 'bot', role: 'admin' }, 403],
      ['a personal key for a keygate:admin user of its org', 'POST', '/admin/v1/keys', { type: 'personal', user: 'dora' }, 403],
      ['a personal key for a * user of its org', 'POST', '/admin/v1/keys', { type: 'personal', user: 'stella' }, 403],
      ['a key recorded as created by another user', 'POST', '/admin/v1/keys', { type: 'bot', role: 'reader', created_by: 'alice' }, 403],
      ['deactivating a keygate:admin user of its org', 'POST', '/admin/v1/users/dora/deactivate', undefined, 403],
      ['a role put', 'PUT', '/admin/v1/roles/orgadmin', { permissions: ['keygate:admin'] }, 403]
    ]
    for (const [label, method, path, body, status] of refused) {
      await restore(gw, world)
      const before = await dump(gw)
      const res = await call(gw, method, path, o, body)
      t.equal(res.status, status, label)
      t.same(await dump(gw), before, `${label}: nothing changed`)
    }
    const adminKeyId = (await f.admin.listKeys({ user: 'dora' }))[0]?.id ?? ''
    await restore(gw, world)
    for (const action of ['rotate', 'revoke']) {
      const res = await call(gw, 'POST', `/admin/v1/keys/${adminKeyId}/${action}`, o, action === 'rotate' ? {} : undefined)
      t.equal(res.status, 403, `${action} of a keygate:admin user's key`)
    }

    const allowed = await call(gw, 'POST', '/admin/v1/keys', o, { type: 'bot', role: 'orgadmin' })
    t.equal(allowed.status, 201, 'a BOT key with its own role (keygate:org:admin by name, which it holds): allowed')
    t.match(allowed.json(), { org: 'acme', role: 'orgadmin' })
    const rotatedBot = await call(gw, 'POST', `/admin/v1/keys/${(allowed.json() as { id: string }).id}/rotate`, o, {})
    t.equal(rotatedBot.status, 201, 'rotating a BOT key of its org: allowed')
    t.match(rotatedBot.json(), { type: 'bot', org: 'acme', role: 'orgadmin' })
    const put = await call(gw, 'PUT', '/admin/v1/users/newcomer', o, { org: 'acme', role: 'reader' })
    t.equal(put.status, 201, 'a new user of its own org, with a role within its permissions')
    await restore(gw, world)
  })

  await t.test('roles an org admin may give: those within its own permissions', async (t) => {
    const roles = (await call(gw, 'GET', '/admin/v1/roles', credential.orgAdmin)).json() as { roles: Array<{ name: string }> }
    const names = roles.roles.map((r) => r.name)
    t.ok(names.includes('orgadmin') && names.includes('reader') && names.includes('writer'))
    t.notOk(names.includes('keyadmin'), 'not keygate:admin')
    t.notOk(names.includes('admin'), 'not *')
  })

  await t.test('GET /session reports the scope', async (t) => {
    t.match((await call(gw, 'GET', '/admin/v1/session', credential.orgAdmin)).json(), { scope: 'org', admin: false, self: false, principal: { org: 'acme', user: 'oscar' } })
    t.match((await call(gw, 'GET', '/admin/v1/session', credential.self)).json(), { scope: 'self', admin: false, self: true })
    t.match((await call(gw, 'GET', '/admin/v1/session', credential.adminKey)).json(), { scope: 'admin', admin: true, self: false })
    t.match((await call(gw, 'GET', '/admin/v1/session', TOKEN)).json(), { scope: 'admin', admin: true, self: false })
  })
})
