// Who may administer what: each scope rule as a table of (principal, snapshot, input) -> verdict.
import t from 'tap'
import { Grants } from '../../../../src/registry/records.js'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import { userViewOf } from '../../../../src/admin/model/views.js'
import {
  actingRole, checkScope, givableRoles, keyFactsOf, keyUserFilter, manageableKey, manageableUser, orgFilter, PERSONAL_KEY_REFUSAL,
  requireAdmin, requireOrgAdmin, roleWithinGrants, seesKey, visibleKey, visibleUser, withinGrants
} from '../../../../src/admin/policy/scope-rules.js'
import { ADMIN, allowed, judge, ORG, refused, SELF, verdict, world } from '../../../helpers/admin-policy.js'

const snap = world()
/** acme's org admin whose own role grants users:read only */
const NARROW: AdminScope = {
  scope: 'org',
  org: 'acme',
  grants: new Grants(['users:read', 'keygate:org:admin']),
  user: undefined
}

t.test('requireAdmin, requireOrgAdmin: refused as a 403 naming the permission, audited as denied', async (t) => {
  const rows: Array<[string, () => void, AdminScope, unknown]> = [
    ['admin: admin', () => { requireAdmin(ADMIN, 'putting a role') }, ADMIN, allowed()],
    [
      'admin: org',
      () => { requireAdmin(ORG, 'putting a role') },
      ORG,
      refused({
        kind: 'forbidden',
        message: 'putting a role needs keygate:admin',
        needs: 'keygate:admin',
        audit: 'denied'
      })
    ],
    [
      'admin: self',
      () => { requireAdmin(SELF, 'putting a role') },
      SELF,
      refused({ kind: 'forbidden', needs: 'keygate:admin' })
    ],
    ['org admin: admin', () => { requireOrgAdmin(ADMIN, 'x') }, ADMIN, allowed()],
    ['org admin: org', () => { requireOrgAdmin(ORG, 'x') }, ORG, allowed()],
    [
      'org admin: self',
      () => { requireOrgAdmin(SELF, 'putting a user') },
      SELF,
      refused({
        kind: 'forbidden',
        message: 'putting a user needs keygate:org:admin',
        needs: 'keygate:org:admin',
        audit: 'denied'
      })
    ]
  ]
  for (const [what, fn, , expected] of rows) judge(t, verdict(fn), expected, what)
})

t.test('listing filters: the caller\'s own org, a self principal\'s own keys; null: nothing it may see', async (t) => {
  const orgs: Array<[AdminScope, string | undefined, string | undefined | null]> = [
    [ADMIN, undefined, undefined], [ADMIN, 'globex', 'globex'],
    [ORG, undefined, 'acme'], [ORG, 'acme', 'acme'], [ORG, 'globex', null],
    [SELF, undefined, 'acme'], [SELF, 'globex', null]
  ]
  for (const [s, asked, expected] of orgs) {
    t.equal(
      orgFilter(s, asked),
      expected,
    `orgFilter ${s.scope} ${String(asked)}`
    )
  }
  const users: Array<[AdminScope, string | undefined, string | undefined | null]> = [
    [ADMIN, 'alice', 'alice'], [ORG, 'alice', 'alice'], [ORG, undefined, undefined],
    [SELF, undefined, 'sam'], [SELF, 'sam', 'sam'], [SELF, 'alice', null]
  ]
  for (const [s, asked, expected] of users) {
    t.equal(
      keyUserFilter(s, asked),
      expected,
    `keyUserFilter ${s.scope} ${String(asked)}`
    )
  }
})

t.test('givableRoles: all for an admin, those within the caller\'s grants otherwise', async (t) => {
  const roles = [
    'reader',
    'writer',
    'orgadmin',
    'selfreader',
    'boss'
  ].map((name) => ({ name, permissions: (snap.roles.get(name)?.permissions ?? '').split(' ') }))
  const rows: Array<[AdminScope, string[]]> = [
    [ADMIN, ['reader', 'writer', 'orgadmin', 'selfreader', 'boss']],
    [ORG, ['reader', 'writer', 'orgadmin', 'selfreader']],
    [SELF, ['reader', 'selfreader']]
  ]
  for (const [s, expected] of rows) t.same(givableRoles(s, roles).map((r) => r.name), expected, s.scope)
})

t.test('seesKey: an org admin its org\'s keys, a self principal the keys its user owns', async (t) => {
  const rows: Array<[AdminScope, { type: string, org: string, user?: string, created_by?: string }, boolean]> = [
    [ADMIN, { type: 'bot', org: 'globex' }, true],
    [ORG, { type: 'bot', org: 'acme' }, true],
    [ORG, { type: 'bot', org: 'globex' }, false],
    [SELF, { type: 'personal', org: 'acme', user: 'sam' }, true],
    [SELF, { type: 'bot', org: 'acme', created_by: 'user:sam' }, true],
    [SELF, { type: 'bot', org: 'acme', created_by: 'sam' }, true],
    [SELF, { type: 'personal', org: 'acme', user: 'alice' }, false],
    [SELF, { type: 'bot', org: 'acme', created_by: 'cli:sam' }, false]
  ]
  for (const [s, key, expected] of rows) t.equal(seesKey(s, key), expected, `${s.scope} ${JSON.stringify(key)}`)
})

t.test('visibleUser, visibleKey: outside the scope is 404 as if missing; reads are not audited as denied', async (t) => {
  const user = (id: string): ReturnType<typeof userViewOf> | undefined => {
    const f = snap.users.get(id)
    return f === undefined ? undefined : userViewOf(id, f)
  }
  const users: Array<[AdminScope, string, unknown]> = [
    [ADMIN, 'ghost', refused({ kind: 'not_found', message: 'user "ghost" does not exist', audit: 'error' })],
    [ADMIN, 'gina', allowed({ id: 'gina', org: 'globex' })],
    [ORG, 'gina', refused({ kind: 'not_found', message: 'user "gina" is not in org acme' })],
    [ORG, 'alice', allowed({ id: 'alice' })],
    [SELF, 'alice', refused({ kind: 'not_found', message: 'user "alice" is not the caller\'s own user' })],
    [SELF, 'sam', allowed({ id: 'sam' })]
  ]
  for (const [s, id, expected] of users) {
    judge(
      t,
      verdict(() => visibleUser(s, id, user(id))),
      expected,
    `user ${s.scope} ${id}`
    )
  }
  const keys: Array<[AdminScope, string, unknown]> = [
    [ADMIN, 'ghost', refused({ kind: 'not_found', message: 'key "ghost" does not exist' })],
    [ORG, 'globex-bot', refused({ kind: 'not_found', message: 'key "globex-bot" is not in org acme' })],
    [ORG, 'bot-boss', allowed({ id: 'bot-boss' })],
    [SELF, 'alice-key', refused({ kind: 'not_found', message: 'key "alice-key" is not a key of user sam' })],
    [SELF, 'bot-reader', allowed({ id: 'bot-reader', created_by: 'user:sam' })],
    [SELF, 'sam-key', allowed({ id: 'sam-key' })]
  ]
  for (const [s, id, expected] of keys) {
    judge(
      t,
      verdict(() => visibleKey(s, id, keyFactsOf(id, snap.keys.get(id)))),
      expected,
    `key ${s.scope} ${id}`
    )
  }
})

t.test('manageableUser: visible, with a role within the caller\'s grants; refusals audited as denied', async (t) => {
  const rows: Array<[AdminScope, string, unknown]> = [
    [SELF, 'sam', refused({ kind: 'forbidden', message: 'user.deactivate needs keygate:org:admin', audit: 'denied' })],
    [ORG, 'gina', refused({ kind: 'not_found', message: 'user "gina" is not in org acme', audit: 'denied' })],
    [ORG, 'ghost', refused({ kind: 'not_found', message: 'user "ghost" does not exist', audit: 'denied' })],
    [
      ORG,
      'root',
      refused({
        kind: 'forbidden',
        message: 'user "root" has role "boss", beyond the caller\'s own permissions',
        needs: 'keygate:admin',
        audit: 'denied'
      })
    ],
    [
      ORG,
      'half',
      refused({ kind: 'forbidden', message: 'user "half" has role "", beyond the caller\'s own permissions' })
    ],
    [ORG, 'alice', allowed({ id: 'alice', role: 'reader' })],
    [ADMIN, 'gina', allowed({ id: 'gina' })],
    [ADMIN, 'ghost', refused({ kind: 'not_found', audit: 'error' })]
  ]
  for (const [s, id, expected] of rows) {
    judge(
      t,
      verdict(() => manageableUser(s, snap, id, 'user.deactivate')),
      expected,
    `${s.scope} ${id}`
    )
  }
})

t.test('manageableKey: visible; an org admin only keys acting within its grants, never another user\'s personal key to rotate', async (t) => {
  const narrowed = world({
    keys: {
      'bot-writer-read': {
        type: 'bot',
        org: 'acme',
        role: 'writer',
        scope: 'users:read',
        status: 'active'
      }
    }
  })
  const rows: Array<[AdminScope, string, 'key.revoke' | 'key.rotate' | 'key.restrict', unknown]> = [
    [
      ORG,
      'globex-bot',
      'key.revoke',
      refused({ kind: 'not_found', message: 'key "globex-bot" is not in org acme', audit: 'denied' })
    ],
    [
      ORG,
      'ghost',
      'key.revoke',
      refused({ kind: 'not_found', message: 'key "ghost" does not exist', audit: 'denied' })
    ],
    [
      ORG,
      'bot-boss',
      'key.revoke',
      refused({
        kind: 'forbidden',
        message: 'key "bot-boss" acts with role "boss", beyond the caller\'s own permissions',
        needs: 'keygate:admin',
        audit: 'denied'
      })
    ],
    [ORG, 'root-key', 'key.restrict', refused({ kind: 'forbidden', message: /acts with role "boss"/ })],
    [ORG, 'bot-reader', 'key.revoke', allowed({ id: 'bot-reader' })],
    [ORG, 'alice-key', 'key.revoke', allowed({ id: 'alice-key' })],
    [
      ORG,
      'alice-key',
      'key.rotate',
      refused({
        kind: 'forbidden',
        message: PERSONAL_KEY_REFUSAL,
        needs: 'keygate:admin',
        details: [{ reason: PERSONAL_KEY_REFUSAL }],
        audit: 'denied'
      })
    ],
    [ORG, 'bot-writer', 'key.rotate', allowed({ id: 'bot-writer' })],
    [NARROW, 'bot-writer', 'key.rotate', refused({ kind: 'forbidden', message: /acts with role "writer"/ })],
    [NARROW, 'bot-writer-read', 'key.rotate', allowed({ id: 'bot-writer-read', scope: ['users:read'] })],
    [
      SELF,
      'bot-reader',
      'key.rotate',
      refused({
        kind: 'forbidden',
        message: 'rotating a BOT key needs keygate:org:admin',
        needs: 'keygate:org:admin',
        audit: 'denied'
      })
    ],
    [SELF, 'bot-reader', 'key.revoke', allowed({ id: 'bot-reader' })],
    [SELF, 'sam-key', 'key.rotate', allowed({ id: 'sam-key' })],
    [
      SELF,
      'alice-key',
      'key.revoke',
      refused({ kind: 'not_found', message: 'key "alice-key" is not a key of user sam', audit: 'denied' })
    ],
    [ADMIN, 'bot-boss', 'key.rotate', allowed({ id: 'bot-boss' })]
  ]
  for (const [s, id, action, expected] of rows) {
    judge(
      t,
      verdict(() => manageableKey(s, narrowed, id, action)),
      expected,
    `${s.scope} ${action} ${id}`
    )
  }
})

t.test('checkScope: a key\'s scope within the caller\'s grants; no scope means the whole role, within them too', async (t) => {
  const facts = (id: string): ReturnType<typeof keyFactsOf> => keyFactsOf(id, snap.keys.get(id))
  const why = (beyond: string): string => `a key's scope is within the caller's own permissions; beyond them: ${beyond}`
  const rows: Array<[AdminScope, readonly string[] | undefined | null, string | undefined, unknown]> = [
    [ADMIN, ['keygate:admin'], undefined, allowed()],
    [ORG, undefined, undefined, allowed()],
    [ORG, ['users:read', 'users:write'], undefined, allowed()],
    [
      ORG,
      ['orders:read', 'users:read', 'keygate:admin'],
      undefined,
      refused({
        kind: 'forbidden',
        message: why('orders:read keygate:admin'),
        needs: 'keygate:admin',
        details: [{ field: 'scope', reason: why('orders:read keygate:admin') }],
        audit: 'denied'
      })
    ],
    [SELF, ['users:write'], undefined, refused({ kind: 'forbidden', needs: 'keygate:org:admin' })],
    [ORG, null, undefined, allowed()],
    [ORG, null, 'alice-key', allowed()],
    [
      ORG,
      null,
      'bot-boss',
      refused({
        kind: 'forbidden',
        message: 'without a scope, key "bot-boss" would act with role "boss", beyond the caller\'s own permissions'
      })
    ],
    [SELF, null, 'bot-reader', allowed()]
  ]
  for (const [s, scope, key, expected] of rows) {
    judge(
      t,
      verdict(() => { checkScope(s, snap, scope, key === undefined ? undefined : facts(key)) }),
      expected,
      `${s.scope} ${JSON.stringify(scope)} ${String(key)}`
    )
  }
})

t.test('withinGrants, roleWithinGrants: a missing role is refused alike; a key\'s scope narrows its role', async (t) => {
  const rows: Array<[Grants, string | undefined, readonly string[] | undefined, boolean]> = [
    [new Grants(['users:*']), 'reader', undefined, true],
    [new Grants(['users:*']), 'boss', undefined, false],
    [new Grants(['users:*']), 'ghost', undefined, false],
    [new Grants(['users:*']), undefined, undefined, false],
    [new Grants(['users:read']), 'writer', undefined, false],
    [new Grants(['users:read']), 'writer', ['users:read'], true],
    [new Grants(['*']), 'boss', undefined, false],
    [new Grants(['keygate:admin']), 'boss', undefined, true]
  ]
  for (const [grants, role, keyScope, expected] of rows) {
    t.equal(
      roleWithinGrants(grants, snap, role, keyScope),
      expected,
    `${grants.permissions.join(' ')} ${String(role)} ${JSON.stringify(keyScope)}`
    )
  }
  t.match(verdict(() => { withinGrants(ADMIN, snap, 'ghost', 'never') }), allowed(), 'an admin: any role')
  t.match(
    verdict(() => { withinGrants(ORG, snap, 'boss', 'beyond') }),
    refused({ kind: 'forbidden', message: 'beyond', needs: 'keygate:admin', audit: 'denied' })
  )
  t.match(
    verdict(() => { withinGrants(SELF, snap, 'ghost', 'missing') }),
    refused({ kind: 'forbidden', message: 'missing', needs: 'keygate:org:admin' })
  )
})

t.test('keyFactsOf, actingRole: a key record\'s owner fields, and the role it acts with', async (t) => {
  t.equal(keyFactsOf('ghost', undefined), undefined, 'no record')
  t.equal(keyFactsOf('odd', { org: 'acme' }), undefined, 'a record without a type is none')
  t.same(keyFactsOf('k', { type: 'bot', org: 'acme', role: 'reader', created_by: 'sam', scope: 'users:read  orders:read', user: '' }),
    { id: 'k', type: 'bot', org: 'acme', role: 'reader', created_by: 'user:sam', scope: ['users:read', 'orders:read'] }, 'typed creator, scope as a list, empty fields left out')
  t.same(keyFactsOf('k', { type: 'personal', user: 'alice' }), { id: 'k', type: 'personal', org: '', user: 'alice' })
  t.equal(
    actingRole(snap, { type: 'personal', user: 'alice', role: 'boss' }),
    'reader',
    'a personal key: its user\'s role'
  )
  t.equal(actingRole(snap, { type: 'personal', user: 'ghost' }), undefined, 'a missing user: none')
  t.equal(actingRole(snap, { type: 'bot', role: 'writer' }), 'writer', 'a BOT key: its own')
})
