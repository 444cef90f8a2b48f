/**
 * Security review, finding 7: `PUT /admin/v1/users/<id>` told an org admin whether a
 * user existed in another org. Naming that org in the body, an existing user answered
 * 404 and a missing one 403.
 *
 * The org asked for is checked first: a body naming another org answers 403, the same
 * body, whether or not the user exists. (User ids are global: an id held in another org
 * cannot be created in one's own, and answers 404 as GET does; that tells the id is
 * taken, nothing of its org or record.)
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../helpers/gateway.js'

t.test('an org admin\'s user put answers another org\'s user exactly as a missing one', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*'])
  await f.user('olga', 'acme', 'orgadmin')
  const olga = (await f.personalKey('olga')).key
  const body = { org: 'globex', role: 'reader', name: 'x' }
  const existing = await call(gw, 'PUT', '/admin/v1/users/carol', olga, body)
  const missing = await call(gw, 'PUT', '/admin/v1/users/nobody', olga, body)
  t.equal(missing.status, 403, 'a missing user in another org: refused')
  t.equal(existing.status, missing.status, 'another org\'s user: the same status')
  t.same(existing.json(), missing.json(), 'and the same body')
  t.equal(await gw.client.hget(`${gw.prefix}user:carol`, 'name'), null, 'carol untouched')
  t.equal(await gw.client.exists(`${gw.prefix}user:nobody`), 0, 'nobody not created')
})
