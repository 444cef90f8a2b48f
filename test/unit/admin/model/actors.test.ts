/** `created_by` values: typed actors, and how a legacy untyped value is read. */
import t from 'tap'
import { isTypedActor, ownerOf, ownsKey, readCreatedBy, rootUserOf } from '../../../../src/admin/model/actors.js'

t.test('reading a stored created_by', async (t) => {
  const cases: Array<[string | undefined, string | undefined, string | undefined]> = [
    // stored          read as             owner
    ['user:alice', 'user:alice', 'alice'],
    ['user:cli:root', 'user:cli:root', 'cli:root'],
    ['key:AbCdEfGhIjKlMnOp', 'key:AbCdEfGhIjKlMnOp', undefined],
    ['cli:root', 'cli:root', undefined],
    ['admin-token', 'admin-token', undefined],
    ['alice', 'user:alice', 'alice'],
    ['test', 'user:test', 'test'],
    ['', undefined, undefined],
    [undefined, undefined, undefined]
  ]
  for (const [stored, read, owner] of cases) {
    t.equal(readCreatedBy(stored), read, `${String(stored)} reads as ${String(read)}`)
    t.equal(ownerOf(stored), owner, `${String(stored)} is owned by ${String(owner)}`)
  }
  t.ok(isTypedActor('user:alice'))
  t.notOk(isTypedActor('alice'), 'an untyped value is not accepted as input')
  t.notOk(isTypedActor('user:'), 'a type without a name neither')
})

t.test('ownership compares typed values', async (t) => {
  const bot = (createdBy: string): { type: string, created_by: string } => ({ type: 'bot', created_by: createdBy })
  t.ok(ownsKey('alice', bot('user:alice')))
  t.ok(ownsKey('alice', bot('alice')), 'a legacy untyped value still names its user')
  t.notOk(ownsKey('cli:root', bot('cli:root')), 'a user named cli:root owns nothing the CLI created')
  t.notOk(ownsKey('admin-token', bot('admin-token')))
  t.ok(ownsKey('cli:root', bot('user:cli:root')), 'but what it created itself is its own')
  t.ok(ownsKey('bob', { type: 'personal', user: 'bob', created_by: 'cli:root' }), 'a personal key is its user\'s')
  t.notOk(
    ownsKey('alice', { type: 'personal', user: 'bob', created_by: 'user:alice' }),
    'creating a personal key for someone else does not make it yours'
  )
})

t.test('a key made by a key belongs to the person at the root of the chain', async (t) => {
  const rows: Array<[string, Record<string, string>, string | undefined]> = [
    ['a personal key: its user', { type: 'personal', user: 'bob', owner: 'user:alice' }, 'bob'],
    ['a BOT key made by a user', { type: 'bot', created_by: 'user:olga' }, 'olga'],
    ['a BOT key made by a key, with its root', { type: 'bot', created_by: 'key:AbC', owner: 'user:olga' }, 'olga'],
    ['a BOT key made by a key, without one', { type: 'bot', created_by: 'key:AbC' }, undefined],
    ['an owner that names no user', { type: 'bot', created_by: 'user:olga', owner: 'cli:root' }, 'olga'],
    ['the CLI\'s', { type: 'bot', created_by: 'cli:root' }, undefined]
  ]
  for (const [what, key, root] of rows) {
    t.equal(rootUserOf({ type: key.type as string, ...key }), root, what)
    if (root !== undefined) t.ok(ownsKey(root, { type: key.type as string, ...key }), `${what}: owned`)
  }
  t.notOk(ownsKey('mallory', { type: 'bot', created_by: 'key:AbC', owner: 'user:olga' }), 'nobody else')
})
