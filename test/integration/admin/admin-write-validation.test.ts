/**
 * Registry writes through the admin API are checked before anything is written: a
 * reference to a role, a user or a creator that does not exist, a deactivated user,
 * and a permission outside the grammar `config check` applies to rules are refused
 * with the catalogue's error object plus `details` (the field, and a reason safe to
 * show); an org with no record is accepted with a `warning`. A refusal never tells an
 * org admin anything of another org: another org's user looks exactly like a missing one.
 * Real Redis, real gateway.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../../helpers/gateway.js'

const TOKEN = 'write-validation-admin-token-0123456789'

interface Detail { field?: string, reason: string }
interface ErrorBody { error: { code: string, message: string, status: number, details?: Detail[] } }

const NOT_FOUND = { code: 'not_found', message: 'Resource not found', status: 404 }
const BAD_REQUEST = { code: 'bad_request', message: 'Malformed request', status: 400 }
const CONFLICT = { code: 'conflict', message: 'Request conflicts with the current state of the registry', status: 409 }
const PERMISSION_HELP = /invalid permission "[^"]*" \(expected resource:action/

t.test('registry writes are checked in one place, with details', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  await gw.fixtures.role('acme-admin', ['keygate:org:admin', 'users:*'])
  await gw.fixtures.user('olga', 'acme', 'acme-admin')
  const olga = await gw.fixtures.personalKey('olga')
  await gw.fixtures.admin.putOrg('acme', { name: 'Acme' })
  await gw.fixtures.admin.putOrg('globex', { name: 'Globex' })

  const refusals = async (action: string): Promise<Array<{ target: string, result: string }>> => {
    const { entries } = (await call(gw, 'GET', '/admin/v1/audit/refusals?since=1h&limit=1000', TOKEN)).json() as { entries: Array<{ action: string, first: { target: string, result: string }, last: { target: string, result: string } }> }
    return entries.filter((e) => e.action === action).flatMap((e) => [e.first, e.last])
  }

  t.test('a reference to something that does not exist: 404 with the field and the reason, nothing written', async (t) => {
    const keysBefore = (await gw.fixtures.admin.listKeys()).length
    const cases: Array<[string, string, string, unknown, Detail[]]> = [
      ['a user with an unknown role', 'PUT', '/admin/v1/users/zed', { org: 'acme', role: 'nosuchrole' },
        [{ field: 'role', reason: 'role "nosuchrole" does not exist' }]],
      ['a personal key of an unknown user', 'POST', '/admin/v1/keys', { type: 'personal', user: 'nobody' },
        [{ field: 'user', reason: 'user "nobody" does not exist' }]],
      ['a BOT key with an unknown role', 'POST', '/admin/v1/keys', { type: 'bot', role: 'nosuchrole', org: 'acme' },
        [{ field: 'role', reason: 'role "nosuchrole" does not exist' }]],
      ['a BOT key with an unknown creator', 'POST', '/admin/v1/keys', { type: 'bot', role: 'reader', org: 'acme', created_by: 'nobody' },
        [{ field: 'created_by', reason: 'user "nobody" does not exist' }]],
      ['every problem in one answer', 'POST', '/admin/v1/keys', { type: 'bot', role: 'ghost', org: 'acme', created_by: 'nobody' },
        [{ field: 'role', reason: 'role "ghost" does not exist' }, { field: 'created_by', reason: 'user "nobody" does not exist' }]]
    ]
    for (const [label, method, path, body, details] of cases) {
      const res = await call(gw, method, path, TOKEN, body)
      t.equal(res.status, 404, label)
      t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      t.same(res.json(), { error: { ...NOT_FOUND, details } }, `${label}: the catalogue's message, the reason in details`)
    }
    t.equal((await call(gw, 'GET', '/admin/v1/users/zed', TOKEN)).status, 404, 'the user was not written')
    t.equal((await gw.fixtures.admin.listKeys()).length, keysBefore, 'no key was written')
    t.ok((await refusals('user.put')).some((e) => e.target === 'user:zed' && e.result.startsWith('error: ')), 'the refused write is in the refusal aggregates')
    t.ok((await refusals('key.create')).some((e) => /created_by|nobody/.test(e.result)), 'so is the refused key creation')
  })

  t.test('a malformed permission: 400, the grammar of rules in config check', async (t) => {
    for (const bad of ['foo', 'USERS:READ', 'users:', ':read', 'users read']) {
      const res = await call(gw, 'PUT', '/admin/v1/roles/odd', TOKEN, { permissions: ['users:read', bad] })
      t.equal(res.status, 400, `"${bad}"`)
      const body = res.json() as ErrorBody
      t.same({ ...body.error, details: undefined }, { ...BAD_REQUEST, details: undefined })
      t.equal(body.error.details?.length, 1, 'one detail: the bad permission')
      t.equal(body.error.details?.[0]?.field, 'permissions')
      t.match(body.error.details?.[0]?.reason, PERMISSION_HELP)
      t.ok(body.error.details?.[0]?.reason.includes(`"${bad}"`), 'names the bad one')
    }
    const roles = (await call(gw, 'GET', '/admin/v1/roles', TOKEN)).json() as { roles: Array<{ name: string }> }
    t.notOk(roles.roles.some((r) => r.name === 'odd'), 'nothing written')
    const good = await call(gw, 'PUT', '/admin/v1/roles/fine', TOKEN, { permissions: ['users:read', 'users:*', 'billing.v2:invoices:read', '*'] })
    t.equal(good.status, 200, 'a permission, a resource wildcard and * are fine')
  })

  t.test('a deactivated user: 409 with the reason in details, the catalogue\'s message kept', async (t) => {
    await gw.fixtures.user('dave', 'acme', 'reader')
    t.equal((await call(gw, 'POST', '/admin/v1/users/dave/deactivate', TOKEN)).status, 200)
    const res = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'personal', user: 'dave' })
    t.equal(res.status, 409)
    t.same(res.json(), { error: { ...CONFLICT, details: [{ field: 'user', reason: 'user "dave" is deactivated' }] } })
  })

  t.test('an org with no record: accepted, with a warning', async (t) => {
    const user = await call(gw, 'PUT', '/admin/v1/users/nora', TOKEN, { org: 'newco', role: 'reader' })
    t.equal(user.status, 201)
    const warning = { field: 'org', reason: 'org "newco" has no record: it has no name and no org rate limit until one is put' }
    t.same(user.json(), { id: 'nora', org: 'newco', role: 'reader', status: 'active', warnings: [warning] })
    const bot = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'newco' })
    t.equal(bot.status, 201)
    t.same((bot.json() as { warnings?: Detail[] }).warnings, [warning])
    t.equal((await gw.get('/api/v1/users', (bot.json() as { key: string }).key)).status, 200, 'the key works')

    t.equal((await call(gw, 'PUT', '/admin/v1/orgs/newco', TOKEN, { name: 'NewCo' })).status, 200)
    const again = await call(gw, 'PUT', '/admin/v1/users/nora', TOKEN, { org: 'newco', role: 'reader' })
    t.equal(again.status, 200)
    t.notOk('warnings' in (again.json() as object), 'no warning once the org has a record')
    const inAcme = await call(gw, 'POST', '/admin/v1/keys', TOKEN, { type: 'bot', role: 'reader', org: 'acme' })
    t.notOk('warnings' in (inAcme.json() as object))
  })

  t.test('an org admin learns nothing of another org from a refusal', async (t) => {
    // carol exists, in globex; nobody does not exist: the same answer, naming only what was sent
    const foreign = await call(gw, 'POST', '/admin/v1/keys', olga.key, { type: 'personal', user: 'carol' })
    const missing = await call(gw, 'POST', '/admin/v1/keys', olga.key, { type: 'personal', user: 'nobody' })
    t.equal(foreign.status, 404)
    t.equal(missing.status, 404)
    t.same(foreign.json(), { error: { ...NOT_FOUND, details: [{ field: 'user', reason: 'user "carol" does not exist' }] } })
    t.same(missing.json(), { error: { ...NOT_FOUND, details: [{ field: 'user', reason: 'user "nobody" does not exist' }] } })
    t.notMatch(foreign.body, /globex/i)

    const put = await call(gw, 'PUT', '/admin/v1/users/carol', olga.key, { org: 'acme', role: 'reader' })
    t.equal(put.status, 404, 'putting another org\'s user: 404 as today')
    t.notMatch(put.body, /globex/i)
    t.same(put.json(), { error: NOT_FOUND }, 'the addressed user is not found: nothing more to say')

    for (const action of ['deactivate', 'activate']) {
      const a = await call(gw, 'POST', `/admin/v1/users/carol/${action}`, olga.key)
      const b = await call(gw, 'POST', `/admin/v1/users/nobody/${action}`, olga.key)
      t.equal(a.status, 404)
      t.same(a.body, b.body, `${action}: another org's user answers like a missing one`)
    }
    t.equal((await gw.fixtures.admin.showUser('carol')).org, 'globex', 'carol untouched')
  })

  t.test('a field the API checks itself: its name and the reason', async (t) => {
    const tooLong = await call(gw, 'POST', '/admin/v1/keys', olga.key, { type: 'bot', role: 'reader', expires_in: '365d' })
    t.equal(tooLong.status, 400)
    t.same(tooLong.json(), { error: { ...BAD_REQUEST, details: [{ field: 'expires_in', reason: 'a BOT key created without keygate:admin expires within 90d at most' }] } })
    const zero = await call(gw, 'GET', '/admin/v1/keys?unused_for=0d', TOKEN)
    t.same(zero.json(), { error: { ...BAD_REQUEST, details: [{ field: 'unused_for', reason: 'expected a duration above zero, like 30s, 24h or 90d' }] } })
  })
})
