/**
 * An org admin got a working key in another org. alice moved from acme to globex (her
 * user record's org changed); acme's org admin rotated alice's old acme key. The
 * rotation checked only her role, and the new key took her *current* org, so acme's
 * admin held a key acting as alice in globex (200 on /api/v1/orgs/globex/x with
 * X-Auth-Org-Id: globex). No race was needed.
 *
 * Now an org admin never rotates (nor creates) a personal key of another user (403),
 * and a rotation by anyone keeps the key's org: a personal key whose user has left the
 * key's org is not rotated (409), since its replacement would act in the user's new org.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../helpers/gateway.js'

const TOKEN = 'test-admin-token-0123456789abcdef'

t.test('acme\'s org admin rotates the old acme key of alice, who moved to globex', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'users:*', 'orgs:read'])
  await f.role('globexreader', ['orgs:read'])
  await f.user('oscar', 'acme', 'orgadmin')
  const oscar = await f.personalKey('oscar')
  await f.user('alice', 'acme', 'globexreader')
  const old = await f.personalKey('alice')
  t.equal((await gw.get('/api/v1/orgs/acme/x', old.key)).status, 200, 'alice\'s acme key works in acme')

  // alice moves to globex: her old acme key is dead
  await f.user('alice', 'globex', 'globexreader')
  t.equal((await gw.get('/api/v1/orgs/globex/x', old.key)).status, 401, 'the old acme key does not act in globex')

  const rotated = await call(gw, 'POST', `/admin/v1/keys/${old.id}/rotate`, oscar.key, {})
  if (rotated.status === 201) {
    // what happened before: a key acting as alice in globex, held by acme's admin
    const stolen = (rotated.json() as { key: string }).key
    const res = await gw.get('/api/v1/orgs/globex/x', stolen)
    const seen = res.status === 200 ? String((res.json() as { headers: Record<string, unknown> }).headers['x-auth-org-id']) : ''
    t.fail(`the rotation minted a key (${res.status} on /api/v1/orgs/globex/x, X-Auth-Org-Id: ${seen})`)
  }
  t.equal(rotated.status, 403, 'an org admin does not rotate another user\'s personal key')
  t.match(rotated.json(), { error: { code: 'forbidden', details: [{ reason: /acts as its user/ }] } }, 'the refusal says why, and nothing more')
  t.equal((await f.admin.listKeys({ user: 'alice' })).length, 1, 'no new key was written')

  // an admin's rotation keeps the key's org too: refused, since alice left it
  const byAdmin = await call(gw, 'POST', `/admin/v1/keys/${old.id}/rotate`, TOKEN, {})
  t.equal(byAdmin.status, 409, 'rotating a key whose user left its org: conflict')
  t.match(byAdmin.json(), { error: { code: 'conflict', details: [{ field: 'user', reason: 'the user is no longer in the key\'s org' }] } })
  t.equal((await f.admin.listKeys({ user: 'alice' })).length, 1, 'still no new key')

  // back in acme, the admin's rotation gives a key in the key's org, acme
  await f.user('alice', 'acme', 'globexreader')
  const back = await call(gw, 'POST', `/admin/v1/keys/${old.id}/rotate`, TOKEN, {})
  t.equal(back.status, 201)
  t.match(back.json(), { org: 'acme', user: 'alice', replaces: old.id })
})
