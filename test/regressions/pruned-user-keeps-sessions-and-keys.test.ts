/**
 * Security review, finding 6: `registry apply --prune` deleted a user but kept its SSO
 * sessions and its personal keys, which came back to life when a user with the same id
 * was created again (a new person handed the old one's keys and browser sessions); a
 * deactivation made by a registry file kept the user's sessions.
 *
 * A user's deletion through a registry file ends its sessions and revokes its active
 * personal keys (named in the plan, `revoked_reason user_deleted`); a deactivation
 * through a file ends its sessions, as through the admin API and the CLI.
 */
import t from 'tap'
import { parseRegistryFile } from '../../src/admin/as-code/registry-file.js'
import { registryYaml } from '../../src/admin/as-code/registry-export.js'
import { SessionStore } from '../../src/admin/sso/sessions.js'
import { adminCall as call, startGateway } from '../helpers/gateway.js'

const cookie = (id: string): Record<string, string> => ({ Cookie: `keygate_session=${id}` })

t.test('a pruned user\'s sessions and keys stay dead when the id is created again', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  await f.role('self-service', ['users:read', 'keygate:keys:self'])
  await f.user('dana', 'acme', 'self-service')
  const key = await f.personalKey('dana')
  const sessions = new SessionStore(gw.client, f.keys, 3_600_000)
  const session = await sessions.begin('dana', 'acme', Date.now())
  t.equal((await gw.get('/api/v1/users', key.key)).status, 200, 'dana\'s key works')
  t.equal((await call(gw, 'GET', '/admin/v1/session', undefined, undefined, cookie(session))).status, 200,
    'and her session')

  const yaml = registryYaml(await f.admin.exportRegistry())
  const without = parseRegistryFile(yaml.replace(/\n {2}dana:\n(?: {4}.*\n)+/, '\n'))
  t.notOk(without.records.user.has('dana'), 'a file without dana')
  const plan = await f.admin.planRegistry(without, true)
  t.match(plan, { ok: true, changes: [{ op: 'delete', kind: 'user', name: 'dana', revokesKeys: [key.id] }] },
    'the plan names the personal key it revokes')
  t.match(await f.admin.applyRegistry(without, { prune: true }), { ok: true })

  t.equal(await gw.client.exists(`${gw.prefix}user-sessions:dana`), 0, 'her session set is gone')
  t.match(await gw.client.hgetall(`${gw.prefix}key:${key.id}`), { status: 'revoked', revoked_reason: 'user_deleted' },
    'her key is revoked')

  // someone else gets the id
  await f.user('dana', 'acme', 'self-service')
  t.equal((await gw.get('/api/v1/users', key.key)).status, 401, 'the old key stays refused')
  t.equal((await call(gw, 'GET', '/admin/v1/session', undefined, undefined, cookie(session))).status, 401,
    'and the old session')
})

t.test('a deactivation by a registry file ends the user\'s sessions', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  await f.role('self-service', ['users:read', 'keygate:keys:self'])
  await f.user('erin', 'acme', 'self-service')
  const sessions = new SessionStore(gw.client, f.keys, 3_600_000)
  const session = await sessions.begin('erin', 'acme', Date.now())
  const yaml = registryYaml(await f.admin.exportRegistry())
  const off = parseRegistryFile(yaml.replace(/(\n {2}erin:\n {4}org: acme\n {4}role: self-service\n)/, '$1    status: deactivated\n'))
  t.equal(off.records.user.get('erin')?.fields.status, 'deactivated', 'a file deactivating erin')
  t.match(await f.admin.applyRegistry(off, { prune: false }), { ok: true })
  t.equal(await gw.client.exists(`${gw.prefix}user-sessions:erin`), 0, 'her session set is gone')

  const on = parseRegistryFile(yaml.replace(/(\n {2}erin:\n {4}org: acme\n {4}role: self-service\n)/, '$1    status: active\n'))
  t.match(await f.admin.applyRegistry(on, { prune: false }), { ok: true, changes: [{ name: 'erin' }] })
  t.equal((await call(gw, 'GET', '/admin/v1/session', undefined, undefined, cookie(session))).status, 401,
    'reactivated, she signs in again: the old session stays ended')
})
