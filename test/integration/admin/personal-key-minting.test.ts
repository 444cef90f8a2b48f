/**
 * Who mints a personal key. A personal key acts as its user (the user's role at each
 * request, in the user's org), so whoever mints one can act as that user: it is created
 * and rotated only by its own user (`keygate:keys:self` included), by `keygate:admin`
 * (the admin token included) or by the CLI. An org admin lists, shows and revokes its org's personal keys, and creates
 * and rotates BOT keys in its org, but never creates or rotates another user's personal
 * key (403, with a detail that says why and nothing about the user).
 *
 * Principals (all in acme): the admin token; dora (role keygate:admin); oscar (org
 * admin); sam (keygate:keys:self). Each is asked for the same things about alice, an
 * acme user, and about itself.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../../helpers/gateway.js'

const TOKEN = 'test-admin-token-0123456789abcdef'
const REASON = 'a personal key acts as its user: only that user or an admin creates or rotates one'

t.test('who creates and rotates a personal key', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  await f.role('keyadmin', ['keygate:admin'])
  await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*', 'orgs:read'])
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])
  await f.user('dora', 'acme', 'keyadmin')
  await f.user('oscar', 'acme', 'orgadmin')
  await f.user('sam', 'acme', 'selfreader')
  const who = {
    token: { credential: TOKEN, user: undefined },
    dora: { credential: (await f.personalKey('dora')).key, user: 'dora' },
    oscar: { credential: (await f.personalKey('oscar')).key, user: 'oscar' },
    sam: { credential: (await f.personalKey('sam')).key, user: 'sam' }
  }

  // [principal, creates alice's, rotates alice's, creates its own, rotates its own]
  // (a self principal does not see alice's keys at all: 404, as if missing)
  const table: Array<[keyof typeof who, number, number, number, number]> = [
    ['token', 201, 201, 0, 0],
    ['dora', 201, 201, 201, 201],
    ['oscar', 403, 403, 201, 201],
    ['sam', 403, 404, 201, 201]
  ]
  for (const [name, createOther, rotateOther, createOwn, rotateOwn] of table) {
    await t.test(name, async (t) => {
      const { credential, user } = who[name]
      const alices = await f.personalKey('alice')
      const before = (await f.admin.listKeys({ user: 'alice' })).length
      const created = await call(gw, 'POST', '/admin/v1/keys', credential, { type: 'personal', user: 'alice' })
      t.equal(created.status, createOther, 'a personal key for alice')
      const rotated = await call(gw, 'POST', `/admin/v1/keys/${alices.id}/rotate`, credential, {})
      t.equal(rotated.status, rotateOther, 'rotating alice\'s personal key')
      if (createOther === 403) {
        if (name === 'oscar') t.match(created.json(), { error: { code: 'forbidden', details: [{ field: 'user', reason: REASON }] } }, 'the creation\'s refusal says why')
        t.equal((await f.admin.listKeys({ user: 'alice' })).length, before, 'nothing was written')
      } else {
        t.match(created.json(), { type: 'personal', user: 'alice', org: 'acme' })
        t.match(rotated.json(), { type: 'personal', user: 'alice', org: 'acme', replaces: alices.id })
      }
      if (name === 'oscar') t.match(rotated.json(), { error: { code: 'forbidden', details: [{ reason: REASON }] } }, 'the rotation\'s refusal says why')
      if (user === undefined) return
      const own = await call(gw, 'POST', '/admin/v1/keys', credential, { type: 'personal', user })
      t.equal(own.status, createOwn, 'a personal key for itself')
      const ownId = (own.json() as { id: string }).id
      t.equal((await call(gw, 'POST', `/admin/v1/keys/${ownId}/rotate`, credential, {})).status, rotateOwn, 'rotating its own personal key')
    })
  }

  await t.test('an org admin still lists, shows and revokes its org\'s personal keys, and creates and rotates BOT keys', async (t) => {
    const o = who.oscar.credential
    const alices = await f.personalKey('alice')
    const listed = (await call(gw, 'GET', '/admin/v1/keys?user=alice', o)).json() as { keys: Array<{ id: string }> }
    t.ok(listed.keys.some((k) => k.id === alices.id), 'listed')
    t.match((await call(gw, 'GET', `/admin/v1/keys/${alices.id}`, o)).json(), { id: alices.id, type: 'personal', user: 'alice' }, 'shown')
    t.equal((await call(gw, 'POST', `/admin/v1/keys/${alices.id}/revoke`, o)).status, 200, 'revoked')
    const bot = await call(gw, 'POST', '/admin/v1/keys', o, { type: 'bot', role: 'reader', name: 'ci' })
    t.equal(bot.status, 201, 'a BOT key in its org')
    const rotated = await call(gw, 'POST', `/admin/v1/keys/${(bot.json() as { id: string }).id}/rotate`, o, {})
    t.equal(rotated.status, 201, 'its rotation')
    t.match(rotated.json(), { type: 'bot', role: 'reader', org: 'acme', name: 'ci' })
  })

  await t.test('rotation carries over the key\'s type, org, owner, name and rate limit', async (t) => {
    const personal = await f.personalKey('alice', { name: 'laptop' })
    await f.admin.setKeyLimit(personal.id, '100/1s')
    const p = (await call(gw, 'POST', `/admin/v1/keys/${personal.id}/rotate`, TOKEN, {})).json()
    t.match(p, { type: 'personal', user: 'alice', org: 'acme', name: 'laptop', rate_limit: '100/1s' })
    t.notOk('role' in (p as object), 'a personal key still has no role of its own')
    const bot = await f.botKey('orgreader', 'globex', { name: 'sync' })
    await f.admin.setKeyLimit(bot.id, '5/1m')
    t.match((await call(gw, 'POST', `/admin/v1/keys/${bot.id}/rotate`, TOKEN, {})).json(), { type: 'bot', role: 'orgreader', org: 'globex', name: 'sync', rate_limit: '5/1m' })
  })
})
