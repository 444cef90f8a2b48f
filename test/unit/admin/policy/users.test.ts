// Users, decided over a snapshot: put (create or update) and status (deactivate, activate).
import t from 'tap'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import type { KeyView } from '../../../../src/admin/model/views.js'
import { decidePutUser, decideUserStatus, type UserInput } from '../../../../src/admin/policy/users.js'
import { ADMIN, allowed, judge, ORG, refused, SELF, verdict, world } from '../../../helpers/admin-policy.js'

const snap = world()
/** root, an admin signed in with a personal key of its own user */
const ROOT_ADMIN: AdminScope = { scope: 'admin', signedInUser: 'root' }
const NAME_HELP = '(letters, digits and _.@:- ; up to 128 characters)'

t.test('decidePutUser: a user\'s email signs a person in: one user\'s, set on another user by an admin only', async (t) => {
  const held = world({
    users: {
      olga: { org: 'acme', role: 'orgadmin', status: 'active', email: 'olga@example.com' },
      alice: { org: 'acme', role: 'reader', status: 'active', email: 'alice@example.com' },
      bob: { org: 'acme', role: 'writer', status: 'active', email: 'old@example.com' }
    },
    emails: { 'alice@example.com': 'alice', 'gone@example.com': 'bob' }
  })
  const put = (email: string): UserInput => ({ org: 'acme', role: 'reader', email })
  const rows: Array<[string, AdminScope, string, UserInput, unknown]> = [
    ['org: another user\'s email', ORG, 'alice', put('olga@example.com'), refused({
      kind: 'forbidden', audit: 'denied', details: [{ field: 'email', reason: 'only keygate:admin sets another user\'s email' }]
    })],
    ['org: a new user\'s email', ORG, 'zed', put('zed@example.com'), refused({ kind: 'forbidden' })],
    ['org: another user\'s email, unchanged (any case)', ORG, 'alice', put('ALICE@example.com'), allowed()],
    ['org: its own email', ORG, 'olga', { org: 'acme', role: 'orgadmin', email: 'o@example.com' },
      allowed({ fromEmail: 'olga@example.com' })],
    ['org: its own, taking another user\'s', ORG, 'olga', { org: 'acme', role: 'orgadmin', email: 'Alice@Example.com' },
      refused({ kind: 'conflict', details: [{ field: 'email', reason: /another user's/ }] })],
    ['admin: another user\'s email', ADMIN, 'bob', put('new@example.com'), allowed({ fromEmail: 'old@example.com' })],
    ['admin: an email the index names for a user who no longer holds it', ADMIN, 'alice', put('gone@example.com'),
      allowed({ fromEmail: 'alice@example.com' })],
    ['admin: another user\'s email', ADMIN, 'bob', put('alice@example.com'), refused({ kind: 'conflict' })]
  ]
  for (const [what, s, id, input, expected] of rows) judge(t, verdict(() => decidePutUser(s, held, id, input)), expected, what)
})

t.test('decidePutUser: who may, the id and references, then the fields (a new user active, an existing one keeps its status)', async (t) => {
  const rows: Array<[string, AdminScope, string, UserInput, { createOnly?: boolean }, unknown]> = [
    ['admin: a new user', ADMIN, 'zed', { org: 'acme', role: 'reader', name: 'Zed' }, {}, allowed({
      fields: {
        org: 'acme',
        role: 'reader',
        status: 'active',
        name: 'Zed'
      },
      fromOrg: undefined,
      created: true,
      warnings: []
    })],
    ['admin: an existing user moved, its status kept', ADMIN, 'dee', { org: 'globex', role: 'writer', email: 'dee@example.com' }, {}, allowed({
      fields: {
        org: 'globex',
        role: 'writer',
        email: 'dee@example.com',
        status: undefined
      },
      fromOrg: 'acme',
      created: false
    })],
    ['admin: an existing user without an org keeps its own', ADMIN, 'dee', { role: 'writer' }, {}, allowed({
      fields: { org: 'acme', role: 'writer', status: undefined },
      fromOrg: undefined,
      created: false
    })],
    ['admin: a new user without an org', ADMIN, 'zed', { role: 'reader' }, {}, refused({
      kind: 'invalid',
      details: [{ field: 'org', reason: 'user "zed" does not exist: a new user needs an org' }]
    })],
    ['admin: an org with no record warns', ADMIN, 'zed', { org: 'newco', role: 'reader' }, {}, allowed({
      warnings: [{
        field: 'org',
        reason: 'org "newco" has no record: it has no name and no org rate limit until one is put'
      }]
    })],
    [
      'admin: a missing role',
      ADMIN,
      'zed',
      { org: 'acme', role: 'ghost' },
      {},
      refused({
        kind: 'not_found',
        details: [{ field: 'role', reason: 'role "ghost" does not exist' }],
        audit: 'error'
      })
    ],
    ['admin: a bot: id and a bad org, every problem', ADMIN, 'bot:zed', { org: 'bad org', role: 'ghost' }, {}, refused({
      kind: 'invalid',
      details: [
        { field: 'id', reason: /starting with "bot:"/ },
        { field: 'org', reason: `invalid org "bad org" ${NAME_HELP}` },
        { field: 'role', reason: 'role "ghost" does not exist' }
      ]
    })],
    [
      'admin: create only, but it exists',
      ADMIN,
      'alice',
      { org: 'acme', role: 'reader' },
      { createOnly: true },
      refused({ kind: 'conflict', message: 'user "alice" exists' })
    ],
    [
      'admin: create only, new',
      ADMIN,
      'zed',
      { org: 'acme', role: 'reader' },
      { createOnly: true },
      allowed({ created: true })
    ],
    [
      'self: no',
      SELF,
      'sam',
      { org: 'acme', role: 'selfreader' },
      {},
      refused({ kind: 'forbidden', message: 'putting a user needs keygate:org:admin', audit: 'denied' })
    ],
    [
      'org: a new user of its org within its grants',
      ORG,
      'zed',
      { org: 'acme', role: 'writer' },
      {},
      allowed({ created: true })
    ],
    ['org: a user of another org', ORG, 'zed', { org: 'globex', role: 'reader' }, {}, refused({
      kind: 'forbidden', message: 'an org admin puts users in its own org (acme) only', needs: 'keygate:admin', audit: 'denied'
    })],
    [
      'org: a role beyond its grants',
      ORG,
      'zed',
      { org: 'acme', role: 'boss' },
      {},
      refused({ kind: 'forbidden', message: 'role "boss" is not within the caller\'s own permissions' })
    ],
    [
      'org: an existing user of another org: as if missing',
      ORG,
      'gina',
      { org: 'acme', role: 'reader' },
      {},
      refused({ kind: 'not_found', message: 'user "gina" is not in org acme', audit: 'denied' })
    ],
    [
      'org: an existing user it does not manage',
      ORG,
      'root',
      { org: 'acme', role: 'reader' },
      {},
      refused({ kind: 'forbidden', message: /user "root" has role "boss"/ })
    ],
    [
      'org: an existing user it manages',
      ORG,
      'alice',
      { org: 'acme', role: 'writer' },
      {},
      allowed({ created: false, fromOrg: undefined })
    ]
  ]
  for (const [what, s, id, input, o, expected] of rows) {
    judge(
      t,
      verdict(() => decidePutUser(s, snap, id, input, o)),
      expected,
      what
    )
  }
})

t.test('decideUserStatus: deactivate or activate; the BOT keys the user created reported, revoked on request', async (t) => {
  const key = (id: string, type: string, status: string): KeyView => ({ id, type, status, org: 'acme', name: '' })
  const listed = [
    key('b1', 'bot', 'active'),
    key('b2', 'bot', 'revoked'),
    key('p1', 'personal', 'active'),
    key('b3', 'bot', 'active')
  ]
  const rows: Array<[string, AdminScope, string, 'active' | 'deactivated', boolean, unknown]> = [
    ['deactivate: reported', ADMIN, 'alice', 'deactivated', false, allowed({
      changed: true,
      createdKeys: ['b1', 'b3'],
      revokedKeys: [],
      org: 'acme',
      detail: {
        from: 'active',
        to: 'deactivated',
        revoked_keys: undefined
      }
    })],
    ['deactivate: revoked in the change', ADMIN, 'alice', 'deactivated', true, allowed({
      changed: true,
      createdKeys: [],
      revokedKeys: ['b1', 'b3'],
      detail: {
        from: 'active',
        to: 'deactivated',
        revoked_keys: 'b1 b3'
      }
    })],
    [
      'activate: nothing revoked, whatever asked',
      ADMIN,
      'dee',
      'active',
      true,
      allowed({
        changed: true,
        createdKeys: ['b1', 'b3'],
        revokedKeys: [],
        detail: { from: 'deactivated', to: 'active' }
      })
    ],
    ['already so', ADMIN, 'dee', 'deactivated', false, allowed({ changed: false })],
    [
      'a missing user',
      ADMIN,
      'ghost',
      'deactivated',
      false,
      refused({ kind: 'not_found', message: 'user "ghost" does not exist', audit: 'error' })
    ],
    [
      'org: a user of another org',
      ORG,
      'gina',
      'deactivated',
      false,
      refused({ kind: 'not_found', message: 'user "gina" is not in org acme', audit: 'denied' })
    ],
    [
      'org: a user with a broader role',
      ORG,
      'root',
      'deactivated',
      false,
      refused({ kind: 'forbidden', message: /user "root" has role "boss"/, audit: 'denied' })
    ],
    ['org: a user it manages', ORG, 'alice', 'deactivated', false, allowed({ changed: true })],
    // nobody deactivates their own user: the policy refuses it, whatever the front end shows
    ['org: itself', ORG, 'olga', 'deactivated', false, refused({
      kind: 'conflict', message: /cannot deactivate themself/, details: [{ field: 'id', reason: /themself/ }]
    })],
    ['admin signed in as a user: itself', ROOT_ADMIN, 'root', 'deactivated', false, refused({
      kind: 'conflict', message: /cannot deactivate themself/
    })],
    ['admin signed in as a user: itself, activated (nothing changes)', ROOT_ADMIN, 'root', 'active', false,
      allowed({ changed: false })],
    ['admin signed in as a user: another user', ROOT_ADMIN, 'alice', 'deactivated', false, allowed({ changed: true })],
    ['the admin token (no user): any user', ADMIN, 'root', 'deactivated', false, allowed({ changed: true })],
    [
      'self: no',
      SELF,
      'sam',
      'deactivated',
      false,
      refused({ kind: 'forbidden', message: 'user.deactivate needs keygate:org:admin' })
    ],
    [
      'self: no activation either',
      SELF,
      'sam',
      'active',
      false,
      refused({ kind: 'forbidden', message: 'user.activate needs keygate:org:admin' })
    ]
  ]
  for (const [what, s, id, status, revoke, expected] of rows) {
    judge(
      t,
      verdict(() => decideUserStatus(s, snap, id, status, { revokeCreatedKeys: revoke }, listed)),
      expected,
      what
    )
  }
})
