/**
 * A key's scope (docs/key-scopes.md): a rule's permission is granted only when the effective
 * role grants it and the scope does, with the permission wildcards on both sides. The
 * table: {personal, BOT} x {no scope, a narrower scope, a scope naming a permission the
 * role lacks, `*`} x {a rule within, a rule outside}. Then a personal key follows its
 * user's live role: narrowed at once, never widened past its scope, on two gateways
 * sharing one registry, within 1 s of the change.
 */
import t from 'tap'
import { eventually, startGateway } from '../../helpers/gateway.js'

const USERS = '/api/v1/users'
const ORGS = '/api/v1/orgs/acme/x'

t.test('{personal, BOT} x {no scope, narrower, naming what the role lacks, *} x {rule within, rule outside}', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  // the role grants users:read and orgs:read; POST /api/v1/users needs users:write
  await f.role('scoped', ['users:read', 'orgs:read'])
  await f.user('sue', 'acme', 'scoped')
  const scopes: Array<[string, string[] | undefined, [string, string], [string, string]]> = [
    // [what, scope, [method, path] within (200), [method, path] outside (403)]
    ['no scope', undefined, ['GET', USERS], ['POST', USERS]],
    ['a narrower scope', ['orgs:read'], ['GET', ORGS], ['GET', USERS]],
    ['a scope naming a permission the role lacks', ['users:read', 'users:write'], ['GET', USERS], ['POST', USERS]],
    ['*', ['*'], ['GET', USERS], ['POST', USERS]],
    ['a wildcard scope over a named grant', ['users:*'], ['GET', USERS], ['GET', ORGS]]
  ]
  for (const type of ['personal', 'bot'] as const) {
    for (const [what, scope, within, outside] of scopes) {
      const { result: created } = await f.admin.createKey(type === 'personal'
        ? { type, user: 'sue', scope }
        : {
            type,
            role: 'scoped',
            org: 'acme',
            scope
          })
      const auth = { Authorization: `Bearer ${created.key}` }
      const yes = await gw.send(within[0], within[1], auth, within[0] === 'POST' ? '{}' : undefined)
      t.equal(yes.status, 200, `${type}, ${what}: ${within.join(' ')} is within`)
      const no = await gw.send(outside[0], outside[1], auth, outside[0] === 'POST' ? '{}' : undefined)
      t.equal(no.status, 403, `${type}, ${what}: ${outside.join(' ')} is outside`)
      t.equal((await gw.logOf(no))?.reason, 'missing_permission')
    }
  }
})

t.test('a scoped key signs in to no admin scope its scope leaves out', async (t) => {
  const gw = await startGateway(t)
  const f = gw.fixtures
  await f.role('boss', ['keygate:admin', 'users:read'])
  await f.user('dora', 'acme', 'boss')
  const { result: narrow } = await f.admin.createKey({ type: 'personal', user: 'dora', scope: ['users:read'] })
  const { result: star } = await f.admin.createKey({ type: 'personal', user: 'dora', scope: ['*'] })
  const { result: named } = await f.admin.createKey({ type: 'personal', user: 'dora', scope: ['keygate:admin'] })
  const session = async (key: string): Promise<number> => (await gw.admin('GET', '/admin/v1/session', { Authorization: `Bearer ${key}` })).status
  t.equal(await session(narrow.key), 403, 'scoped to users:read: no admin scope')
  t.equal(await session(star.key), 403, '`*` never grants a keygate: permission')
  t.equal(await session(named.key), 200, 'named in the scope and granted by the role')
  t.equal((await gw.get(USERS, narrow.key)).status, 200, 'the narrow key still works on the data plane')
})

t.test('a personal key follows its user\'s live role: narrowed at once, never widened past its scope (two gateways)', async (t) => {
  const a = await startGateway(t)
  const b = await startGateway(t, { redis: a.redis, prefix: a.prefix, seed: false })
  const f = a.fixtures
  await f.role('live', ['users:read'])
  await f.user('lee', 'acme', 'live')
  const { result: key } = await f.admin.createKey({
    type: 'personal',
    user: 'lee',
    scope: ['users:read', 'users:write']
  })
  const status = async (gw: typeof a, method: string, path: string): Promise<number> =>
    (await gw.send(method, path, { Authorization: `Bearer ${key.key}` }, method === 'POST' ? '{}' : undefined)).status
  for (const gw of [a, b]) {
    t.equal(await status(gw, 'GET', USERS), 200, 'cached: users:read')
    t.equal(await status(gw, 'POST', USERS), 403, 'users:write is in the scope, not the role')
    t.equal(await status(gw, 'GET', ORGS), 403)
  }

  await f.role('live', ['users:read', 'users:write', 'orgs:read'])
  for (const [name, gw] of [['a', a], ['b', b]] as const) {
    t.ok(await eventually(async () => await status(gw, 'POST', USERS) === 200, 1000) >= 0, `${name}: the widened role gives what the scope names, within 1 s`)
    t.equal(await status(gw, 'GET', ORGS), 403, `${name}: never what the scope leaves out`)
  }

  await f.role('live', ['users:write'])
  for (const [name, gw] of [['a', a], ['b', b]] as const) {
    t.ok(await eventually(async () => await status(gw, 'GET', USERS) === 403, 1000) >= 0, `${name}: the narrowed role narrows the key within 1 s`)
    t.equal(await status(gw, 'POST', USERS), 200)
  }

  await f.admin.restrictKey(key.id, { scope: ['users:read'] })
  for (const [name, gw] of [['a', a], ['b', b]] as const) {
    t.ok(await eventually(async () => await status(gw, 'POST', USERS) === 403, 1000) >= 0, `${name}: a restricted scope applies within 1 s`)
  }
})
