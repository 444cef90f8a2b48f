// Roles (admin only): put and delete, decided over the role and who uses it.
import t from 'tap'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import type { KeyView, UserView } from '../../../../src/admin/model/views.js'
import { decideDeleteRole, decidePutRole } from '../../../../src/admin/policy/roles.js'
import { ADMIN, allowed, judge, ORG, refused, verdict, world } from '../../../helpers/admin-policy.js'

t.test('decidePutRole: admin only; the permissions\' grammar first, then the name, then the limit', async (t) => {
  const bad = 'invalid permission "Users" (expected resource:action, resource:* or *, in lower case)'
  const rows: Array<[string, AdminScope, string, string[], string | undefined, string | null | undefined, unknown]> = [
    [
      'a role',
      ADMIN,
      'reader',
      ['users:read', 'orgs:read'],
      undefined,
      undefined,
      allowed({ fields: { permissions: 'users:read orgs:read' }, detail: { permissions: 'users:read orgs:read' } })
    ],
    [
      'with a description and a limit',
      ADMIN,
      'reader',
      [],
      'reads',
      '5/1s',
      allowed({ fields: { permissions: '', description: 'reads', rate_limit: '5/1s' } })
    ],
    [
      'its limit removed',
      ADMIN,
      'reader',
      ['users:read'],
      undefined,
      null,
      allowed({
        fields: { permissions: 'users:read', rate_limit: undefined },
        detail: { permissions: 'users:read', rate_limit: '' }
      })
    ],
    [
      'an org admin',
      ORG,
      'reader',
      ['users:read'],
      undefined,
      undefined,
      refused({ kind: 'forbidden', message: 'putting a role needs keygate:admin', audit: 'denied' })
    ],
    [
      'a bad permission and a bad name: the permission first',
      ADMIN,
      'bad name',
      ['Users'],
      undefined,
      undefined,
      refused({ kind: 'invalid', message: bad, details: [{ field: 'permissions', reason: bad }] })
    ],
    [
      'a bad name',
      ADMIN,
      'bad name',
      ['users:read'],
      undefined,
      undefined,
      refused({ kind: 'invalid', message: /invalid role "bad name"/, details: undefined })
    ],
    [
      'a bad limit',
      ADMIN,
      'reader',
      ['users:read'],
      undefined,
      'fast',
      refused({ kind: 'invalid', message: /invalid rate limit "fast"/ })
    ]
  ]
  for (const [what, s, name, permissions, description, limit, expected] of rows) {
    judge(
      t,
      verdict(() => decidePutRole(s, name, permissions, description, limit)),
      expected,
      what
    )
  }
})

t.test('decideDeleteRole: a missing role is 404; one in use refused, naming its users and active BOT keys, unless forced', async (t) => {
  const snap = world()
  const users: UserView[] = [
    { id: 'alice', role: 'reader' },
    { id: 'bob', role: 'writer' },
    { id: 'carl', role: 'reader' }
  ]
  const key = (
    id: string,
    type: string,
    role: string,
    status: string
  ): KeyView => ({ id, type, role, status, org: 'acme', name: '' })
  const keys = [
    key('b1', 'bot', 'reader', 'active'),
    key('b2', 'bot', 'reader', 'revoked'),
    key('p1', 'personal', 'reader', 'active'),
    key('b3', 'bot', 'writer', 'active')
  ]
  const rows: Array<[string, AdminScope, string, boolean, unknown]> = [
    ['unused', ADMIN, 'boss', false, allowed({ users: [], keys: [] })],
    ['in use', ADMIN, 'reader', false, refused({
      kind: 'conflict', message: 'role "reader" is still used by users alice, carl and BOT keys b1; reassign them, or force the deletion (they will then have no permissions)', audit: 'error'
    })],
    [
      'used by users only',
      ADMIN,
      'writer',
      false,
      refused({ kind: 'conflict', message: /still used by users bob and BOT keys b3;/ })
    ],
    ['forced', ADMIN, 'reader', true, allowed({ users: ['alice', 'carl'], keys: ['b1'] })],
    ['missing', ADMIN, 'ghost', true, refused({ kind: 'not_found', message: 'role "ghost" does not exist' })],
    [
      'an org admin',
      ORG,
      'boss',
      false,
      refused({ kind: 'forbidden', message: 'deleting a role needs keygate:admin', audit: 'denied' })
    ]
  ]
  for (const [what, s, name, force, expected] of rows) {
    judge(
      t,
      verdict(() => decideDeleteRole(s, snap, name, force, users, keys)),
      expected,
      what
    )
  }
  judge(
    t,
    verdict(() => decideDeleteRole(ADMIN, snap, 'selfreader', false, [{ id: 'sam', role: 'selfreader' }], [])),
    refused({ message: /still used by users sam;/ }),
    'users alone'
  )
})
