/**
 * GET /admin/v1/orgs?in_use=true: the orgs named on users and keys, with or without a
 * record (docs/admin-api.md), each with `record` and how many users and keys name it.
 * Without `in_use` the list is the org records alone. An org admin sees its own org only.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../../helpers/gateway.js'

const TOKEN = 'orgs-in-use-admin-token-0123456789abcdef'

interface Org { org: string, record?: boolean, users?: number, keys?: number, name?: string }

t.test('the orgs in use: records, and orgs named on users and keys only', async (t) => {
  const gw = await startGateway(t, { configure: (c) => { c.admin_token = TOKEN } })
  // the standard world: alice and bob in acme, carol in globex; a BOT key in initech (no user), a record for umbrella
  await gw.fixtures.botKey('reader', 'initech', { name: 'initech bot' })
  await gw.fixtures.personalKey('alice')
  t.equal((await call(gw, 'PUT', '/admin/v1/orgs/umbrella', TOKEN, { name: 'Umbrella', rate_limit: '10/1s' })).status, 200)

  const records = (await call(gw, 'GET', '/admin/v1/orgs', TOKEN)).json() as { orgs: Org[] }
  t.same(records.orgs.map((o) => o.org), ['umbrella'], 'without in_use: the records alone')
  t.equal(records.orgs[0]?.record, undefined, 'and no in-use fields')

  const used = (await call(gw, 'GET', '/admin/v1/orgs?in_use=true', TOKEN)).json() as { orgs: Org[] }
  t.same(used.orgs.map(({ org, record, users, keys }) => ({ org, record, users, keys })), [
    { org: 'acme', record: false, users: 2, keys: 1 },
    { org: 'globex', record: false, users: 1, keys: 0 },
    { org: 'initech', record: false, users: 0, keys: 1 },
    { org: 'umbrella', record: true, users: 0, keys: 0 }
  ], 'every org named on a user or key, and every record, sorted')
  t.equal(used.orgs[3]?.name, 'Umbrella', 'a record keeps its fields')
  t.equal((await call(gw, 'GET', '/admin/v1/orgs?in_use=maybe', TOKEN)).status, 400, 'in_use is true or false')

  // an org admin: its own org only
  await gw.fixtures.role('acme-admin', ['users:*', 'keygate:org:admin'])
  await gw.fixtures.user('olga', 'acme', 'acme-admin')
  const olga = await gw.fixtures.personalKey('olga')
  const own = (await call(gw, 'GET', '/admin/v1/orgs?in_use=true', olga.key)).json() as { orgs: Org[] }
  t.same(own.orgs.map(({ org, record, users, keys }) => ({ org, record, users, keys })),
    [{ org: 'acme', record: false, users: 3, keys: 2 }], 'an org admin: its own org, as in use')
})
