/**
 * Self-service BOT keys expire.
 *
 * The bug: a BOT key created by a `keygate:keys:self` principal never expired unless
 * its creator asked, so a key made by one user outlived every later review of that
 * user. Now a BOT key created by a `keygate:keys:self` or `keygate:org:admin`
 * principal lives at most `admin.self_service_max_ttl` (default 90d): no expiry given
 * means exactly that long; a longer one is refused (400) and nothing is created. An
 * admin's BOT keys are unaffected.
 */
import t from 'tap'
import { parseConfig } from '../../src/config/load.js'
import { adminCall as call, startGateway, type TestGateway } from '../helpers/gateway.js'

const TOKEN = 'test-admin-token-0123456789abcdef'
const DAY = 86_400_000

interface Created { id: string, expires_at?: string }

async function world (gw: TestGateway): Promise<{ self: string, orgAdmin: string }> {
  const f = gw.fixtures
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])
  await f.role('orgadmin', ['users:*', 'keygate:org:admin'])
  await f.user('sam', 'acme', 'selfreader')
  await f.user('oscar', 'acme', 'orgadmin')
  return { self: (await f.personalKey('sam')).key, orgAdmin: (await f.personalKey('oscar')).key }
}

function expiresIn (created: Created, now: number): number {
  return Date.parse(created.expires_at ?? 'no expiry') - now
}

t.test('the default cap, 90d', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const who = await world(gw)

  for (const [label, credential] of [['keygate:keys:self', who.self], ['keygate:org:admin', who.orgAdmin]] as const) {
    await t.test(label, async (t) => {
      const now = Date.now()
      const open = await call(gw, 'POST', '/admin/v1/keys', credential, { type: 'bot', role: 'reader' })
      t.equal(open.status, 201)
      t.ok(Math.abs(expiresIn(open.json() as Created, now) - 90 * DAY) < 60_000, 'no expiry asked: it expires in 90 days')

      const shorter = await call(gw, 'POST', '/admin/v1/keys', credential, { type: 'bot', role: 'reader', expires_in: '30d' })
      t.equal(shorter.status, 201)
      t.ok(Math.abs(expiresIn(shorter.json() as Created, now) - 30 * DAY) < 60_000, 'a shorter expiry is kept')

      const before = (await gw.fixtures.admin.listKeys()).length
      const longer = await call(gw, 'POST', '/admin/v1/keys', credential, { type: 'bot', role: 'reader', expires_in: '91d' })
      t.equal(longer.status, 400, 'a longer expiry is refused')
      t.equal((await gw.fixtures.admin.listKeys()).length, before, 'nothing was created')
    })
  }

  await t.test('an admin\'s BOT key keeps no expiry unless asked', async (t) => {
    const res = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'acme' })
    t.equal(res.status, 201)
    t.notOk('expires_at' in (res.json() as Created))
  })

  await t.test('an org admin\'s rotation of a BOT key that never expires gives one that does', async (t) => {
    const old = await gw.fixtures.botKey('reader', 'acme')
    const now = Date.now()
    const res = await call(gw, 'POST', `/admin/v1/keys/${old.id}/rotate`, who.orgAdmin, { grace: '1h' })
    t.equal(res.status, 201)
    t.ok(Math.abs(expiresIn(res.json() as Created, now) - 90 * DAY) < 60_000, 'the new key expires in 90 days')
  })

  await t.test('personal keys are the user\'s own and are not capped', async (t) => {
    const res = await call(gw, 'POST', '/admin/v1/keys', who.self, { type: 'personal' })
    t.equal(res.status, 201)
    t.notOk('expires_at' in (res.json() as Created))
  })
})

t.test('admin.self_service_max_ttl sets the cap', async (t) => {
  const gw = await startGateway(t, { yaml: 'admin: { self_service_max_ttl: 2h }' })
  const who = await world(gw)
  const now = Date.now()
  const res = await call(gw, 'POST', '/admin/v1/keys', who.self, { type: 'bot', role: 'reader' })
  t.equal(res.status, 201)
  t.ok(Math.abs(expiresIn(res.json() as Created, now) - 2 * 3_600_000) < 60_000, 'expires in 2h')
  t.equal((await call(gw, 'POST', '/admin/v1/keys', who.self, { type: 'bot', role: 'reader', expires_in: '3h' })).status, 400)
})

t.test('the setting is a duration, validated at start-up', async (t) => {
  for (const bad of ['forever', '0d', '90', '-1d']) {
    t.throws(() => parseConfig(`admin: { self_service_max_ttl: "${bad}" }`, {}, 'test'), /admin\.self_service_max_ttl/, bad)
  }
  t.equal(parseConfig('{}', {}, 'test', { forServing: false }).admin.self_service_max_ttl, '90d')
})
