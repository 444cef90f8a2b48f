/**
 * `keygate:keys:self`: a personal key that manages its own user's keys through the
 * admin API, and nothing else, with no escalation through a BOT key:
 *
 *   sam (acme, role selfreader: users:read keygate:keys:self)
 *   - creates a personal key for sam: 201, and it works on the data plane
 *   - a personal key for alice: 403 (counted in the audit trail's refusals as denied)
 *   - a BOT key with a role within sam's permissions: 201, and on the data plane the
 *     BOT key is allowed and denied exactly by that role
 *   - a BOT key with a broader role (users:*, *, or one sam lacks): 403; in another
 *     org: 403
 *   - sees, shows and revokes its own keys (revoked: 401 on the data plane); another
 *     user's key is 404, as if it did not exist, and stays untouched
 *   - reads its own user, lists the roles it may give a BOT key; the rest is 403
 */
import t from 'tap'
import { adminCall as call, eventually, startGateway } from '../../helpers/gateway.js'
import type { RefusalAggregate } from '../../../src/admin/model/views.js'

interface Created { id: string, key: string, type: string, org: string, user?: string, role?: string, name: string }
interface KeyView { id: string, type: string, user?: string, role?: string, status: string, created_by?: string }
interface AuditEntry { actor: string, action: string, target: string, result: string }

t.test('a keygate:keys:self key manages its own keys, and only those', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])
  await f.role('orgsonly', ['orgs:read'])
  await f.role('empty-role', [])
  await f.user('sam', 'acme', 'selfreader')
  const sam = await f.personalKey('sam', { name: 'sam-console' })
  const alicesKey = await f.personalKey('alice')
  const foreignBot = await f.botKey('reader', 'acme', { createdBy: 'bob' })
  const secrets = [sam.key, alicesKey.key, foreignBot.key]
  const data = async (key: string, path = '/api/v1/users'): Promise<number> => (await gw.get(path, key)).status
  const audit = async (): Promise<AuditEntry[]> =>
    (await f.admin.readAudit()).filter((e) => e.actor === `key:${sam.id}`)
  // refused attempts are aggregated per principal, action and minute: the first and the last of each are kept, and the count
  const samsRefusals = async (): Promise<RefusalAggregate[]> =>
    (await f.admin.readRefusals({ limit: 1000 })).entries.filter((e) => e.actor === `key:${sam.id}`)
  const refused = async (): Promise<AuditEntry[]> => (await samsRefusals()).flatMap((a) => [a.first, a.last].map((x) => ({ actor: a.actor, action: a.action, target: x.target, result: x.result })))
  const refusedCount = async (action: string): Promise<number> => (await samsRefusals()).filter((a) => a.action === action).reduce((n, a) => n + a.count, 0)

  await t.test('a personal key for itself: 201, and it works on the data plane', async (t) => {
    const res = await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'personal', name: 'laptop', expires_in: '30d' })
    t.equal(res.status, 201)
    const k = res.json() as Created
    secrets.push(k.key)
    t.match(k, { type: 'personal', user: 'sam', org: 'acme', name: 'laptop' })
    t.equal(await data(k.key), 200)
    const explicit = await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'personal', user: 'sam' })
    t.equal(explicit.status, 201, 'naming its own user is fine')
    secrets.push((explicit.json() as Created).key)
    t.match((await call(gw, 'GET', `/admin/v1/keys/${k.id}`, sam.key)).json(), { id: k.id, created_by: 'user:sam' })
  })

  await t.test('a personal key for another user: 403, audited as denied', async (t) => {
    const res = await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'personal', user: 'alice' })
    t.equal(res.status, 403)
    t.same(res.json(), { error: { code: 'forbidden', message: 'Insufficient permissions for this resource', status: 403 } })
    t.equal(res.headers['www-authenticate'], 'Bearer realm="keygate", error="insufficient_scope", scope="keygate:org:admin"')
    t.ok((await refused()).some((e) => e.action === 'key.create' && e.target === 'user:alice' && e.result.startsWith('denied: ')))
    const alices = await f.admin.listKeys({ user: 'alice' })
    t.same(alices.map((k) => k.id), [alicesKey.id], 'no key was created for alice')
  })

  await t.test('created_by may name only itself: another user is 403, nothing created', async (t) => {
    const before = (await f.admin.listKeys({})).length
    const res = await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'bot', role: 'empty-role', created_by: 'alice' })
    t.equal(res.status, 403)
    t.equal((await f.admin.listKeys({})).length, before)
    t.ok((await refused()).some((e) => e.action === 'key.create' && e.target === 'user:alice' && e.result.startsWith('denied: ')))
    const own = await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'bot', role: 'empty-role', created_by: 'sam' })
    t.equal(own.status, 201, 'naming itself is fine')
    secrets.push((own.json() as Created).key)
  })

  await t.test('a BOT key with a role within its permissions: 201; the data plane follows that role', async (t) => {
    for (const role of ['reader', 'empty-role']) {
      const res = await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'bot', role, name: `ci-${role}` })
      t.equal(res.status, 201, `role ${role}`)
      const bot = res.json() as Created
      secrets.push(bot.key)
      t.match(bot, { type: 'bot', role, org: 'acme' }, 'the org defaults to its own')
      t.notOk('user' in bot)
      t.match((await call(gw, 'GET', `/admin/v1/keys/${bot.id}`, sam.key)).json(), { created_by: 'user:sam' })
      t.equal(await data(bot.key, '/api/v1/open/ping'), 200, `${role}: any valid key may use an open route`)
      t.equal(await data(bot.key), role === 'reader' ? 200 : 403, `${role}: GET /api/v1/users (users:read)`)
      t.equal((await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${bot.key}` })).status, 403, `${role}: POST /api/v1/users needs users:write`)
      t.equal(await data(bot.key, '/api/v1/orgs/acme/projects'), 403, `${role}: no orgs:read`)
      t.equal((await call(gw, 'GET', '/admin/v1/session', bot.key)).status, 403, 'the BOT key has no admin access of its own')
    }
  })

  await t.test('a BOT key with a broader role, or in another org: 403, nothing created', async (t) => {
    const before = (await f.admin.listKeys()).length
    const countBefore = await refusedCount('key.create')
    const attempts: Array<[string, unknown]> = [
      ['users:* (broader than users:read)', { type: 'bot', role: 'writer' }],
      ['* (everything)', { type: 'bot', role: 'admin' }],
      ['orgs:read (a permission it lacks)', { type: 'bot', role: 'orgsonly' }],
      ['a role that does not exist (same answer as a broader one)', { type: 'bot', role: 'ghost' }],
      ['another org', { type: 'bot', role: 'reader', org: 'globex' }]
    ]
    for (const [label, body] of attempts) {
      const res = await call(gw, 'POST', '/admin/v1/keys', sam.key, body)
      t.equal(res.status, 403, label)
      t.same(res.json(), { error: { code: 'forbidden', message: 'Insufficient permissions for this resource', status: 403 } })
    }
    t.equal((await f.admin.listKeys()).length, before, 'no key was created')
    t.equal(await refusedCount('key.create'), countBefore + attempts.length, `every attempt is counted in the audit trail's refusals as key:${sam.id}`)
    t.ok((await refused()).some((e) => e.action === 'key.create' && e.target === 'role:reader' && e.result.startsWith('denied: ')), 'the last attempt is kept')
    t.notOk((await audit()).some((e) => e.result !== 'ok'), 'the trail of changes holds changes only')
  })

  await t.test('its list holds its own keys only; another user\'s key is 404 and untouched', async (t) => {
    const list = (await call(gw, 'GET', '/admin/v1/keys', sam.key)).json() as { keys: KeyView[] }
    t.ok(list.keys.length >= 5)
    t.ok(list.keys.every((k) => k.user === 'sam' || (k.type === 'bot' && k.created_by === 'user:sam')), 'only sam\'s keys and the BOT keys sam created')
    t.ok(list.keys.some((k) => k.id === sam.id))
    t.same((await call(gw, 'GET', '/admin/v1/keys?user=alice', sam.key)).json(), { keys: [] }, 'filtering by another user gives nothing')

    for (const other of [alicesKey, foreignBot]) {
      const shown = await call(gw, 'GET', `/admin/v1/keys/${other.id}`, sam.key)
      t.equal(shown.status, 404)
      t.same(shown.body, (await call(gw, 'GET', '/admin/v1/keys/AAAAAAAAAAAAAAAA', sam.key)).body, 'the same answer as for a key that does not exist')
      const revoke = await call(gw, 'POST', `/admin/v1/keys/${other.id}/revoke`, sam.key)
      t.equal(revoke.status, 404)
      t.equal(await data(other.key), 200, 'the other key still works')
      t.equal((await f.admin.showKey(other.id)).status, 'active')
    }
    t.ok((await refused()).some((e) => e.action === 'key.revoke' && e.target === `key:${alicesKey.id}` && e.result.startsWith('denied: ')), 'the attempt is audited')
  })

  await t.test('revokes its own keys: 200, then the data plane gives 401', async (t) => {
    const made = (await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'bot', role: 'reader' })).json() as Created
    secrets.push(made.key)
    t.equal(await data(made.key), 200)
    const res = await call(gw, 'POST', `/admin/v1/keys/${made.id}/revoke`, sam.key)
    t.equal(res.status, 200)
    t.same(res.json(), { id: made.id, changed: true })
    t.ok(await eventually(async () => await data(made.key) === 401, 1500) >= 0, 'the revoked BOT key gets 401')
    t.ok((await audit()).some((e) => e.action === 'key.revoke' && e.target === `key:${made.id}` && e.result === 'ok'))

    const own = (await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'personal' })).json() as Created
    secrets.push(own.key)
    t.equal((await call(gw, 'POST', `/admin/v1/keys/${own.id}/revoke`, sam.key)).status, 200)
    t.ok(await eventually(async () => await data(own.key) === 401, 1500) >= 0, 'the revoked personal key gets 401')
    t.equal((await call(gw, 'GET', '/admin/v1/session', sam.key)).status, 200, 'the signing-in key itself is unaffected')
  })

  await t.test('reads its own user, and the roles it may give a BOT key', async (t) => {
    t.match((await call(gw, 'GET', '/admin/v1/users/sam', sam.key)).json(), { id: 'sam', org: 'acme', role: 'selfreader', status: 'active' })
    t.equal((await call(gw, 'GET', '/admin/v1/users/alice', sam.key)).status, 404, 'another user: 404')
    const roles = (await call(gw, 'GET', '/admin/v1/roles', sam.key)).json() as { roles: Array<{ name: string }> }
    t.same(roles.roles.map((r) => r.name).sort(), ['empty-role', 'none', 'reader', 'selfreader'], 'only roles within users:read keygate:keys:self (its own included)')
  })

  await t.test('rotates its own personal keys, not the BOT keys it made; routes beyond its scope: 403 naming the permission needed', async (t) => {
    const own = (await call(gw, 'GET', '/admin/v1/keys', sam.key)).json() as { keys: KeyView[] }
    const personal = own.keys.find((k) => k.type === 'personal' && k.status === 'active')
    const rotated = await call(gw, 'POST', `/admin/v1/keys/${personal?.id ?? ''}/rotate`, sam.key, {})
    t.equal(rotated.status, 201, 'its own personal key: rotated')
    t.match(rotated.json(), { type: 'personal', user: 'sam', org: 'acme', replaces: personal?.id })
    secrets.push((rotated.json() as Created).key)
    const bot = (await call(gw, 'POST', '/admin/v1/keys', sam.key, { type: 'bot', role: 'reader' })).json() as Created
    secrets.push(bot.key)
    const rotate = await call(gw, 'POST', `/admin/v1/keys/${bot.id}/rotate`, sam.key, {})
    t.equal(rotate.status, 403, 'a BOT key it made: 403')
    t.equal(rotate.headers['www-authenticate'], 'Bearer realm="keygate", error="insufficient_scope", scope="keygate:org:admin"')
    t.equal((await call(gw, 'PUT', '/admin/v1/users/sam', sam.key, { org: 'acme', role: 'admin' })).status, 403, 'cannot change its own role')
    t.equal((await call(gw, 'PUT', '/admin/v1/roles/selfreader', sam.key, { permissions: ['*'] })).status, 403, 'cannot widen its role')
    t.equal((await f.admin.showUser('sam')).role, 'selfreader')
    t.same((await f.admin.showRole('selfreader')).permissions, ['users:read', 'keygate:keys:self'])
  })

  await t.test('no secret in any listing or log line', async (t) => {
    const listed = await f.admin.listKeys()
    const bodies = (await call(gw, 'GET', '/admin/v1/keys', sam.key)).body + JSON.stringify(listed)
    const logs = gw.rawLogs.join('\n')
    for (const s of secrets) {
      t.notOk(bodies.includes(s.slice(-38)), 'not in a listing')
      t.notOk(logs.includes(s.slice(-38)), 'not in the logs')
    }
  })

  await t.test('losing keygate:keys:self ends its access at once', async (t) => {
    await f.role('selfreader', ['users:read'])
    t.ok(await eventually(async () => (await call(gw, 'GET', '/admin/v1/keys', sam.key)).status === 403, 1500) >= 0)
  })
})
