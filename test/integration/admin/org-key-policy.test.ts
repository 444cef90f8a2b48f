/**
 * An org's key policy (`key_max_ttl` on `keygate:org:<org>`): every key created or
 * rotated in the org afterwards expires within it, whoever creates it. No expiry asked
 * means the cap; a longer one is refused (400). Keys that outlive it are listed
 * (`over_policy`). Other orgs are untouched.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../../helpers/gateway.js'

const TOKEN = 'test-admin-token-0123456789abcdef'
const DAY = 86_400_000

interface Created { id: string, key: string, expires_at?: string }
const lifeDays = (c: Created): number => Math.round((Date.parse(c.expires_at ?? '') - Date.now()) / DAY)

t.test('key_max_ttl caps every key created or rotated in the org', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*'])
  await f.user('oscar', 'acme', 'orgadmin')
  const oscar = (await f.personalKey('oscar')).key
  const before = await f.personalKey('alice')
  const untouched = await f.botKey('reader', 'acme')

  const put = await call(gw, 'PUT', '/admin/v1/orgs/acme', TOKEN, { key_max_ttl: '30d' })
  t.equal(put.status, 200)
  t.match(put.json(), { org: 'acme', key_max_ttl: '30d' })
  t.equal((await call(gw, 'PUT', '/admin/v1/orgs/acme', TOKEN, { key_max_ttl: 'soon' })).status, 400, 'not a duration')
  t.equal((await call(gw, 'PUT', '/admin/v1/orgs/acme', oscar, { key_max_ttl: '1000d' })).status, 403, 'an org admin does not set its own policy')

  const capped = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'personal', user: 'alice' })
  t.equal(capped.status, 201)
  t.equal(lifeDays(capped.json() as Created), 30, 'no expiry asked: the cap, even for an admin')
  const longer = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'acme', expires_in: '31d' })
  t.equal(longer.status, 400, 'a longer one: 400')
  t.match(longer.json(), { error: { details: [{ field: 'expires_in' }] } })
  t.equal(lifeDays((await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'acme', expires_in: '7d' })).json() as Created), 7, 'a shorter one is kept')
  const selfService = await call(gw, 'POST', '/admin/v1/keys', oscar, { type: 'bot', role: 'reader' })
  t.equal(lifeDays(selfService.json() as Created), 30, 'an org admin\'s BOT key: the shorter of the org cap and the self-service cap')
  t.notOk('expires_at' in ((await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'globex' })).json() as object), 'another org: no cap')

  const rotated = await call(gw, 'POST', `/admin/v1/keys/${before.id}/rotate`, TOKEN, {})
  t.equal(rotated.status, 201)
  t.equal(lifeDays(rotated.json() as Created), 30, 'a key made before the policy, rotated: within it')

  const over = (await call(gw, 'GET', '/admin/v1/keys?org=acme&over_policy=true', TOKEN)).json() as { keys: Created[] }
  t.ok(over.keys.some((k) => k.id === untouched.id), 'a key made before the policy, never expiring, outlives it')
  t.notOk(over.keys.some((k) => k.id === before.id), 'the rotated one ends with its grace period, within it')
  t.notOk(over.keys.some((k) => k.id === (capped.json() as Created).id), 'a capped key does not')
  t.equal((await call(gw, 'GET', '/admin/v1/keys?over_policy=true', TOKEN)).status, 400, 'over_policy needs an org')

  t.equal((await call(gw, 'PUT', '/admin/v1/orgs/acme', TOKEN, { key_max_ttl: null })).status, 200, 'removed')
  t.notOk('expires_at' in ((await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'personal', user: 'alice' })).json() as object), 'no cap any more')
})
