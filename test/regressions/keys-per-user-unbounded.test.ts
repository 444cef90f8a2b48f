/**
 * Security review, finding 6: nothing bounded the keys a user could hold. A self-service
 * principal could mint keys without end (each a record, index entries and a cache entry
 * on every instance), and revoked and expired keys' records stayed forever.
 *
 * A user owns at most `keys.max_per_user` live keys (its personal keys and the BOT keys
 * at the root of whose chain it is; default 100): a creation or an import past it is
 * refused `409`, in the contract's error shape. A revoked or expired key's record is deleted
 * `keys.purge_after` after its end by the next key creation for the same owner, with
 * its index entries, its last use and an imported key's lookup, audited as `key.purge`.
 */
import { randomBytes } from 'node:crypto'
import t from 'tap'
import { adminCall as call, startGateway } from '../helpers/gateway.js'

const DAY = 86_400_000

t.test('a user owns at most keys.max_per_user live keys; dead ones past keys.purge_after are purged', async (t) => {
  const gw = await startGateway(t, { yaml: 'keys: { prefix: kg_, max_per_user: 3, purge_after: 30d }\n' })
  const f = gw.fixtures
  await f.role('self-service', ['users:read', 'keygate:keys:self'])
  await f.user('dana', 'acme', 'self-service')
  const first = await f.personalKey('dana')
  const personal = async (): Promise<ReturnType<typeof call>> =>
    await call(gw, 'POST', '/admin/v1/keys', first.key, { type: 'personal', name: 'more' })
  t.equal((await personal()).status, 201, 'a second')
  t.equal((await personal()).status, 201, 'a third')
  const over = await personal()
  t.equal(over.status, 409, 'a fourth live key: refused')
  t.match(over.json(), {
    error: { code: 'conflict', status: 409, details: [{ field: 'user', reason: /keys\.max_per_user/ }] }
  }, 'in the contract\'s error shape')
  t.equal((await f.admin.listKeys({ user: 'dana' })).length, 3, 'nothing written')

  // an expired key no longer counts, and a revoked one neither
  const keys = await f.admin.listKeys({ user: 'dana' })
  const [a, b] = keys.map((k) => k.id).filter((id) => id !== first.id) as [string, string]
  await gw.client.hset(`${gw.prefix}key:${a}`, 'expires_at', new Date(Date.now() - 31 * DAY).toISOString())
  await f.admin.revokeKey(b)
  await gw.client.hset(`${gw.prefix}key:${b}`, 'revoked_at', new Date(Date.now() - 29 * DAY).toISOString())
  await gw.client.hset(`${gw.prefix}usage`, a, new Date().toISOString())
  const made = await personal()
  t.equal(made.status, 201, 'with two of three dead: one more')

  t.equal(await gw.client.exists(`${gw.prefix}key:${a}`), 0, 'the key expired 31 days ago: purged')
  t.notOk(await gw.client.sismember(`${gw.prefix}keys`, a), 'from every index')
  t.notOk(await gw.client.sismember(`${gw.prefix}user-keys:dana`, a))
  t.notOk(await gw.client.sismember(`${gw.prefix}org-keys:acme`, a))
  t.equal(await gw.client.hget(`${gw.prefix}usage`, a), null, 'and its last use')
  t.equal(await gw.client.hget(`${gw.prefix}key:${b}`, 'status'), 'revoked', 'the one revoked 29 days ago: kept')
  const audit = (await f.admin.readAudit(DAY)).find((e) => e.action === 'key.purge')
  t.match(audit, { target: 'user:dana', detail: new RegExp(a) }, 'audited as key.purge')
})

t.test('an import counts the keys it adds for each user against keys.max_per_user', async (t) => {
  const TOKEN = 'bounds-admin-token-0123456789abcdef'
  const gw = await startGateway(t, {
    yaml: 'keys: { prefix: kg_, accept_imported: true, max_per_user: 3 }\n', env: { KEYGATE_ADMIN_TOKEN: TOKEN }
  })
  await gw.fixtures.personalKey('alice')
  await gw.fixtures.personalKey('alice')
  const token = (): string => randomBytes(16).toString('hex')
  const two = await call(gw, 'POST', '/admin/v1/keys/import', TOKEN,
    [{ type: 'personal', user: 'alice', key: token() }, { type: 'personal', user: 'alice', key: token() }])
  t.equal(two.status, 409, 'two more for a user with two of three: refused')
  t.equal((await gw.fixtures.admin.listKeys({ user: 'alice' })).length, 2, 'nothing written')
  const one = await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, [{ type: 'personal', user: 'alice', key: token() }])
  t.equal(one.status, 201, 'one more: imported')
})
