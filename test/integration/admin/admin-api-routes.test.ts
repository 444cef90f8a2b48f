/**
 * Every admin API route, as an admin (the admin token, and a key granting
 * `keygate:admin`), against real Redis, with its effect on the data plane:
 *
 * - roles, users and keys: create, list, show, change; a created key works on the
 *   data plane at once, a revoked one stops, a rotated one has a grace period;
 *   deactivating a user stops its personal keys.
 * - the only responses holding a key are create and rotate; no response ever
 *   holds a hash, and no log line holds a key.
 * - every change is in the audit trail with the acting principal
 *   (`admin-token`, `key:<keyId>`); refused attempts are counted apart.
 * - refusals: unknown record 404, a change the registry refuses 409, a bad request
 *   400; all with the catalogue's error object and nothing of fastify's; a refused
 *   write adds `details` (test/integration/admin/admin-write-validation.test.ts has them all).
 */
import t from 'tap'
import { adminCall as call, eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'

const TOKEN = 'routes-admin-token-0123456789abcdef'
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/

interface Created { id: string, key: string, type: string, org: string, user?: string, role?: string, name: string, created_at: string, expires_at?: string, replaces?: string, replaces_expires_at?: string }
interface KeyView { id: string, type: string, status: string, created_by?: string, [field: string]: unknown }
interface AuditEntry { actor: string, action: string, target: string, result: string, detail?: string }

const ERROR = {
  bad_request: { code: 'bad_request', message: 'Malformed request', status: 400 },
  not_found: { code: 'not_found', message: 'Resource not found', status: 404 },
  conflict: { code: 'conflict', message: 'Request conflicts with the current state of the registry', status: 409 }
}

async function auditOf (gw: TestGateway): Promise<AuditEntry[]> {
  return ((await call(gw, 'GET', '/admin/v1/audit?since=1h&limit=1000', TOKEN)).json() as { entries: AuditEntry[] }).entries
}

/** refused attempts: aggregated per principal, action and minute, with the first and the last attempt */
async function refusalsOf (gw: TestGateway): Promise<AuditEntry[]> {
  const { entries } = (await call(gw, 'GET', '/admin/v1/audit/refusals?since=1h&limit=1000', TOKEN)).json() as { entries: Array<{ actor: string, action: string, first: AuditEntry, last: AuditEntry }> }
  return entries.flatMap((a) => [a.first, a.last].map((x) => ({ actor: a.actor, action: a.action, target: x.target, result: x.result })))
}

t.test('every route, as an admin', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  await gw.fixtures.role('keyadmin', ['keygate:admin'])
  await gw.fixtures.user('dora', 'acme', 'keyadmin')
  const adminKey = await gw.fixtures.personalKey('dora', { name: 'dora-console' })
  const secrets: string[] = [adminKey.key]
  const dataStatus = async (key: string, path = '/api/v1/users'): Promise<number> => (await gw.get(path, key)).status

  // the same walk with each admin credential: the token, then a keygate:admin key
  for (const [label, cred, actor] of [['the admin token', TOKEN, 'admin-token'], ['a keygate:admin key', adminKey.key, `key:${adminKey.id}`]] as const) {
    await t.test(`as ${label}`, async (t) => {
      const suffix = label === 'the admin token' ? 't' : 'k'
      const role = `viewer-${suffix}`
      const user = `erin-${suffix}`

      await t.test('roles: put (create, replace), list, 409 while in use, delete with force', async (t) => {
        const put = await call(gw, 'PUT', `/admin/v1/roles/${role}`, cred, { permissions: ['orgs:read'], description: 'reads orgs' })
        t.equal(put.status, 200)
        t.same(put.json(), { name: role, permissions: ['orgs:read'], description: 'reads orgs' })
        const replaced = await call(gw, 'PUT', `/admin/v1/roles/${role}`, cred, { permissions: ['users:read', 'orgs:read'] })
        t.same(replaced.json(), { name: role, permissions: ['users:read', 'orgs:read'], description: 'reads orgs' }, 'replace keeps an unsent description')
        const list = (await call(gw, 'GET', '/admin/v1/roles', cred)).json() as { roles: Array<{ name: string }> }
        t.ok(list.roles.some((r) => r.name === role))
        t.ok(list.roles.some((r) => r.name === 'admin'), 'every role, * included')

        await gw.fixtures.role(`temp-${suffix}`, ['users:read'])
        await gw.fixtures.user(`uses-temp-${suffix}`, 'acme', `temp-${suffix}`)
        const refused = await call(gw, 'DELETE', `/admin/v1/roles/temp-${suffix}`, cred)
        t.equal(refused.status, 409, 'a role in use is not deleted without force')
        t.same((refused.json() as { error: unknown }).error, { ...ERROR.conflict, details: [{ reason: `role "temp-${suffix}" is still used by users uses-temp-${suffix}; reassign them, or force the deletion (they will then have no permissions)` }] })
        t.equal((await call(gw, 'DELETE', `/admin/v1/roles/temp-${suffix}?force=false`, cred)).status, 409)
        const forced = await call(gw, 'DELETE', `/admin/v1/roles/temp-${suffix}?force=true`, cred)
        t.equal(forced.status, 200)
        t.same(forced.json(), { name: `temp-${suffix}`, users: [`uses-temp-${suffix}`], keys: [] })
        t.equal((await call(gw, 'DELETE', `/admin/v1/roles/temp-${suffix}`, cred)).status, 404, 'gone')
      })

      await t.test('users: put (201 created, 200 updated), show, list, deactivate and activate on the data plane', async (t) => {
        const created = await call(gw, 'PUT', `/admin/v1/users/${user}`, cred, { org: 'acme', role, name: 'Erin', email: `${user}@example.com` })
        t.equal(created.status, 201)
        const warnings = [{ field: 'org', reason: 'org "acme" has no record: it has no name and no org rate limit until one is put' }]
        t.same(created.json(), { id: user, org: 'acme', role, status: 'active', name: 'Erin', email: `${user}@example.com`, warnings })
        const updated = await call(gw, 'PUT', `/admin/v1/users/${user}`, cred, { org: 'acme', role })
        t.equal(updated.status, 200)
        t.same((await call(gw, 'GET', `/admin/v1/users/${user}`, cred)).json(), { id: user, org: 'acme', role, status: 'active', name: 'Erin', email: `${user}@example.com` })
        const acme = (await call(gw, 'GET', '/admin/v1/users?org=acme', cred)).json() as { users: Array<{ id: string, org: string }> }
        t.ok(acme.users.some((u) => u.id === user))
        t.ok(acme.users.every((u) => u.org === 'acme'), 'filtered by org')
        const everyone = (await call(gw, 'GET', '/admin/v1/users', cred)).json() as { users: Array<{ id: string }> }
        t.ok(everyone.users.some((u) => u.id === 'carol'), 'unfiltered: every org')

        const k = await gw.fixtures.personalKey(user)
        t.equal(await dataStatus(k.key), 200)
        t.same((await call(gw, 'POST', `/admin/v1/users/${user}/deactivate`, cred)).json(), { id: user, changed: true, created_keys: [], revoked_keys: [] })
        t.same((await call(gw, 'POST', `/admin/v1/users/${user}/deactivate`, cred)).json(), { id: user, changed: false, created_keys: [], revoked_keys: [] }, 'twice: no change')
        t.ok(await eventually(async () => await dataStatus(k.key) === 401, 1500) >= 0, 'its personal keys stop')
        t.same((await call(gw, 'POST', `/admin/v1/users/${user}/activate`, cred, {})).json(), { id: user, changed: true, created_keys: [], revoked_keys: [] }, 'a {} body is fine too')
        t.ok(await eventually(async () => await dataStatus(k.key) === 200, 1500) >= 0, 'and work again')
        t.equal((await call(gw, 'POST', '/admin/v1/users/nobody/activate', cred)).status, 404)
        t.equal((await call(gw, 'GET', '/admin/v1/users/nobody', cred)).status, 404)
      })

      await t.test('keys: create, list, show, revoke, rotate, with their effect on the data plane', async (t) => {
        const personal = await call(gw, 'POST', '/admin/v1/keys', cred, { type: 'personal', user, name: 'laptop', expires_in: '90d' })
        t.equal(personal.status, 201)
        t.equal(personal.headers['cache-control'], 'no-store', 'a response with a key is never cached')
        const p = personal.json() as Created
        secrets.push(p.key)
        t.match(p, { type: 'personal', user, org: 'acme', name: 'laptop', created_at: ISO, expires_at: ISO })
        t.notOk('role' in p, 'a personal key has no role of its own')
        t.equal(await dataStatus(p.key), 200, 'the new personal key works at once (role viewer: users:read)')

        const botRes = await call(gw, 'POST', '/admin/v1/keys', cred, { type: 'bot', role: 'orgreader', org: 'globex', name: 'ci' })
        t.equal(botRes.status, 201)
        const bot = botRes.json() as Created
        secrets.push(bot.key)
        t.match(bot, { type: 'bot', role: 'orgreader', org: 'globex', name: 'ci' })
        t.equal(await dataStatus(bot.key, '/api/v1/orgs/globex/projects'), 200, 'the BOT key acts with its role')
        t.equal(await dataStatus(bot.key), 403, '...and only with it')

        const shown = (await call(gw, 'GET', `/admin/v1/keys/${bot.id}`, cred)).json() as KeyView
        t.match(shown, { id: bot.id, type: 'bot', role: 'orgreader', org: 'globex', name: 'ci', status: 'active', created_at: ISO, created_by: actor })
        const byUser = (await call(gw, 'GET', `/admin/v1/keys?user=${user}`, cred)).json() as { keys: KeyView[] }
        t.ok(byUser.keys.some((k) => k.id === p.id))

        // created_by, as `keys create --created-by`: a BOT key made for a user is listed under that user
        const forUser = await call(gw, 'POST', '/admin/v1/keys', cred, { type: 'bot', role: 'orgreader', org: 'globex', name: 'team bot', created_by: user })
        t.equal(forUser.status, 201)
        const teamBot = forUser.json() as Created
        secrets.push(teamBot.key)
        t.match((await call(gw, 'GET', `/admin/v1/keys/${teamBot.id}`, cred)).json(), { id: teamBot.id, created_by: user })
        t.ok(((await call(gw, 'GET', `/admin/v1/keys?user=${user}`, cred)).json() as { keys: KeyView[] }).keys.some((k) => k.id === teamBot.id), 'listed under that user')
        t.ok(byUser.keys.every((k) => k.user === user), 'filtered by user')
        const byOrg = (await call(gw, 'GET', '/admin/v1/keys?org=globex', cred)).json() as { keys: KeyView[] }
        t.ok(byOrg.keys.some((k) => k.id === bot.id))
        t.ok(byOrg.keys.every((k) => k.org === 'globex'))
        const unused = (await call(gw, 'GET', '/admin/v1/keys?unused_for=1d', cred)).json() as { keys: KeyView[] }
        t.notOk(unused.keys.some((k) => k.id === bot.id), 'a key created just now is not unused for a day')

        const rotatedRes = await call(gw, 'POST', `/admin/v1/keys/${bot.id}/rotate`, cred, { grace: '1h' })
        t.equal(rotatedRes.status, 201)
        const rotated = rotatedRes.json() as Created
        secrets.push(rotated.key)
        t.match(rotated, { type: 'bot', role: 'orgreader', org: 'globex', name: 'ci', replaces: bot.id, replaces_expires_at: ISO })
        t.equal(await dataStatus(rotated.key, '/api/v1/orgs/globex/x'), 200, 'the new key works')
        t.equal(await dataStatus(bot.key, '/api/v1/orgs/globex/x'), 200, 'the old one too, during the grace period')
        t.match((await call(gw, 'GET', `/admin/v1/keys/${bot.id}`, cred)).json(), { replaced_by: rotated.id })
        const noBody = await call(gw, 'POST', `/admin/v1/keys/${rotated.id}/rotate`, cred)
        t.equal(noBody.status, 201, 'no body: the default grace (24h)')
        const graceEnd = Date.parse((noBody.json() as Created).replaces_expires_at ?? '')
        t.ok(Math.abs(graceEnd - (Date.now() + 24 * 3_600_000)) < 60_000, 'replaces_expires_at is about now + 24h')
        secrets.push((noBody.json() as Created).key)

        const revoked = await call(gw, 'POST', `/admin/v1/keys/${p.id}/revoke`, cred)
        t.same(revoked.json(), { id: p.id, changed: true })
        t.ok(await eventually(async () => await dataStatus(p.key) === 401, 1500) >= 0, 'a revoked key stops on the data plane')
        t.same((await call(gw, 'POST', `/admin/v1/keys/${p.id}/revoke`, cred)).json(), { id: p.id, changed: false })
        t.match((await call(gw, 'GET', `/admin/v1/keys/${p.id}`, cred)).json(), { status: 'revoked', revoked_at: ISO })
        const again = await call(gw, 'POST', `/admin/v1/keys/${p.id}/rotate`, cred, {})
        t.equal(again.status, 409, 'a revoked key cannot be rotated')
        t.same((again.json() as { error: unknown }).error, { ...ERROR.conflict, details: [{ reason: `key "${p.id}" is revoked; only an active key can be rotated` }] })
      })

      await t.test('the audit trail names the acting principal', async (t) => {
        const entries = (await auditOf(gw)).filter((e) => e.actor === actor)
        const actions = new Set(entries.map((e) => `${e.action} ${e.result}`))
        for (const a of ['role.put ok', 'role.delete ok', 'user.put ok', 'user.deactivate ok', 'user.activate ok', 'key.create ok', 'key.rotate ok', 'key.revoke ok']) {
          t.ok(actions.has(a), `${a} by ${actor}`)
        }
        t.notOk(entries.some((e) => e.result !== 'ok'), 'the trail of changes holds changes only')
        const refusals = (await refusalsOf(gw)).filter((e) => e.actor === actor)
        t.ok(refusals.some((e) => e.action === 'role.delete' && e.result.startsWith('error: ') && e.target === `role:temp-${suffix}`), 'refusals are audited too, apart')
      })
    })
  }

  await t.test('GET /permissions: every permission the rules reference, plus keygate\'s own', async (t) => {
    const res = await call(gw, 'GET', '/admin/v1/permissions', TOKEN)
    t.equal(res.status, 200)
    t.same(res.json(), { permissions: ['keygate:admin', 'keygate:keys:self', 'keygate:org:admin', 'orgs:read', 'users:read', 'users:write'] })
  })

  await t.test('refusals: the catalogue\'s error object, nothing of fastify\'s', async (t) => {
    const cases: Array<[string, string, string, unknown, keyof typeof ERROR, Record<string, string>?, Array<{ field?: string, reason: string }>?]> = [
      ['an unknown field', 'POST', '/admin/v1/keys', { type: 'personal', user: 'alice', admin: true }, 'bad_request'],
      ['a wrong type', 'POST', '/admin/v1/keys', { type: 'root', user: 'alice' }, 'bad_request'],
      ['a missing field', 'PUT', '/admin/v1/users/zoe', { org: 'acme' }, 'bad_request'],
      ['no body where one is needed', 'POST', '/admin/v1/keys', undefined, 'bad_request'],
      ['a bad duration', 'POST', '/admin/v1/keys', { type: 'personal', user: 'alice', expires_in: '3 weeks' }, 'bad_request'],
      ['a zero duration', 'POST', '/admin/v1/keys/AAAAAAAAAAAAAAAA/rotate', { grace: '0s' }, 'bad_request', undefined, [{ field: 'grace', reason: 'expected a duration above zero, like 30s, 24h or 90d' }]],
      ['a personal key with a role', 'POST', '/admin/v1/keys', { type: 'personal', user: 'alice', role: 'admin' }, 'bad_request', undefined, [{ reason: 'a personal key takes its org and role from its user: no role or org' }]],
      ['a BOT key without an org', 'POST', '/admin/v1/keys', { type: 'bot', role: 'reader' }, 'bad_request', undefined, [{ reason: 'a BOT key needs an org' }]],
      ['a BOT key with a user', 'POST', '/admin/v1/keys', { type: 'bot', role: 'reader', org: 'acme', user: 'alice' }, 'bad_request', undefined, [{ reason: 'a BOT key has no user' }]],
      ['a malformed key id', 'GET', '/admin/v1/keys/not-an-id', undefined, 'bad_request'],
      ['a bad user id', 'PUT', '/admin/v1/users/-bad', { org: 'acme', role: 'reader' }, 'bad_request'],
      ['a bad permission', 'PUT', '/admin/v1/roles/odd', { permissions: ['users read'] }, 'bad_request', undefined, [{ field: 'permissions', reason: 'invalid permission "users read" (expected resource:action, resource:* or *, in lower case)' }]],
      ['an unknown query parameter', 'GET', '/admin/v1/keys?owner=alice', undefined, 'bad_request'],
      ['a repeated query parameter', 'GET', '/admin/v1/users?org=a&org=b', undefined, 'bad_request'],
      ['a bad force value', 'DELETE', '/admin/v1/roles/reader?force=yes', undefined, 'bad_request'],
      ['a body on a body-less action', 'POST', '/admin/v1/users/alice/activate', { really: true }, 'bad_request'],
      ['invalid JSON', 'POST', '/admin/v1/keys', '{"type": ', 'bad_request'],
      ['JSON that is not an object', 'POST', '/admin/v1/keys', '["personal"]', 'bad_request'],
      ['a prototype-poisoning body', 'POST', '/admin/v1/keys', '{"type":"personal","user":"alice","__proto__":{"x":1}}', 'bad_request'],
      ['another media type', 'POST', '/admin/v1/keys', 'type=personal', 'bad_request', { 'Content-Type': 'application/x-www-form-urlencoded' }],
      ['an unknown user', 'POST', '/admin/v1/keys', { type: 'personal', user: 'nobody' }, 'not_found', undefined, [{ field: 'user', reason: 'user "nobody" does not exist' }]],
      ['an unknown role', 'POST', '/admin/v1/keys', { type: 'bot', role: 'ghost', org: 'acme' }, 'not_found', undefined, [{ field: 'role', reason: 'role "ghost" does not exist' }]],
      ['an unknown key', 'GET', '/admin/v1/keys/AAAAAAAAAAAAAAAA', undefined, 'not_found'],
      ['an unknown key to revoke', 'POST', '/admin/v1/keys/AAAAAAAAAAAAAAAA/revoke', undefined, 'not_found'],
      ['an unknown role to delete', 'DELETE', '/admin/v1/roles/ghost', undefined, 'not_found'],
      ['an unknown route', 'GET', '/admin/v1/nothing', undefined, 'not_found'],
      ['a method a route does not have', 'DELETE', '/admin/v1/keys', undefined, 'not_found']
    ]
    for (const [label, method, path, body, code, headers, details] of cases) {
      const res = await call(gw, method, path, TOKEN, body, headers)
      t.equal(res.status, ERROR[code].status, `${label}: ${ERROR[code].status}`)
      t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      t.same(res.json(), { error: details === undefined ? ERROR[code] : { ...ERROR[code], details } }, `${label}: the catalogue's body, and a refused write's details, nothing more`)
    }
    const invalid = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'personal', user: 'alice', expires_in: 'soon' })
    const line = await gw.logOf(invalid) ?? gw.logs.find((l) => l.req_id === invalid.headers['x-request-id'])
    t.match(line, { status: 400, detail: /^body\/expires_in: / }, 'the log line names the failing field')
    t.notMatch(String(line?.detail), /soon/, '...but not the value sent')
  })

  await t.test('a whole key pasted where an id or a name belongs is refused unread', async (t) => {
    const before = (await auditOf(gw)).length
    const pasted = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'personal', user: 'alice', name: adminKey.key })
    t.equal(pasted.status, 400)
    const asId = await call(gw, 'POST', `/admin/v1/keys/${adminKey.key}/revoke`, TOKEN)
    t.equal(asId.status, 400)
    const inQuery = await call(gw, 'GET', `/admin/v1/keys?user=${adminKey.key}`, TOKEN)
    t.equal(inQuery.status, 400)
    t.equal((await auditOf(gw)).length, before, 'nothing reached the audit trail')
    t.equal((await call(gw, 'GET', `/admin/v1/keys/${adminKey.id}`, TOKEN)).status, 200, 'the key itself is untouched')
  })

  await t.test('no response holds a hash; only create and rotate hold a key; no log line holds one', async (t) => {
    const listed = await call(gw, 'GET', '/admin/v1/keys', TOKEN)
    const keys = (listed.json() as { keys: KeyView[] }).keys
    t.ok(keys.length >= 6)
    const hashes = await Promise.all(keys.map(async (k) => await gw.client.hget(gw.fixtures.keys.key(k.id), 'hash')))
    const bodies = [listed.body, ...await Promise.all(keys.map(async (k) => (await call(gw, 'GET', `/admin/v1/keys/${k.id}`, TOKEN)).body))]
    const audit = (await call(gw, 'GET', '/admin/v1/audit', TOKEN)).body
    for (const body of [...bodies, audit]) {
      t.notMatch(body, /"hash"/)
      for (const h of hashes) if (h !== null) t.notOk(body.includes(h), 'no stored hash')
      for (const s of secrets) t.notOk(body.includes(s.slice(-38)), 'no secret')
    }
    const logs = gw.rawLogs.join('\n')
    t.notOk(logs.includes(TOKEN), 'no admin token in the logs')
    for (const s of secrets) t.notOk(logs.includes(s.slice(-38)), 'no key secret in the logs')
    for (const h of hashes) if (h !== null) t.notOk(logs.includes(h), 'no hash in the logs')
  })
})
