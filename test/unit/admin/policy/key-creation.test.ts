// A key creation, decided over a snapshot: who may (keyToCreate), then references and the record,
// in that order (decideKeyCreation).
import t from 'tap'
import { Grants } from '../../../../src/registry/records.js'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import { decideKeyCreation, keyCreationTarget, keyToCreate } from '../../../../src/admin/policy/key-creation.js'
import type { KeyRequest } from '../../../../src/admin/policy/key-input.js'
import { PERSONAL_KEY_REFUSAL } from '../../../../src/admin/policy/scope-rules.js'
import { ADMIN, allowed, judge, ORG, ORG_BOT, refused, SELF, verdict, world } from '../../../helpers/admin-policy.js'

const DAY = 86_400_000
const MAX = 90 * DAY
const NOW = Date.parse('2027-01-01T00:00:00Z')
const snap = world()
/** sam on a key scoped to keygate:keys:self alone: narrower than sam's role */
const SCOPED_SELF: AdminScope = { scope: 'self', org: 'acme', grants: new Grants(['keygate:keys:self']), user: 'sam' }
const scopeWhy = (beyond: string): string => `a key's scope is within the caller's own permissions; beyond them: ${beyond}`

t.test('keyToCreate: who may create which key, defaults filled in', async (t) => {
  const rows: Array<[string, AdminScope, KeyRequest, unknown]> = [
    [
      'a personal key with a role',
      ADMIN,
      { type: 'personal', user: 'alice', role: 'writer' },
      refused({
        kind: 'invalid',
        message: 'a personal key takes its org and role from its user: no role or org',
        audit: 'error'
      })
    ],
    [
      'a personal key with an org',
      ORG,
      { type: 'personal', org: 'acme' },
      refused({ kind: 'invalid', message: /takes its org and role from its user/ })
    ],
    [
      'a BOT key with a user',
      ADMIN,
      { type: 'bot', role: 'reader', org: 'acme', user: 'alice' },
      refused({ kind: 'invalid', message: 'a BOT key has no user' })
    ],
    [
      'admin: a personal key without a user',
      ADMIN,
      { type: 'personal' },
      refused({ kind: 'invalid', message: 'a personal key needs a user' })
    ],
    [
      'admin: a BOT key without an org',
      ADMIN,
      { type: 'bot', role: 'reader' },
      refused({ kind: 'invalid', message: 'a BOT key needs an org' })
    ],
    [
      'admin: a BOT key without role or org',
      ADMIN,
      { type: 'bot' },
      refused({ kind: 'invalid', message: 'a BOT key needs a role and an org' })
    ],
    ['admin: another user recorded as creator', ADMIN, { type: 'personal', user: 'alice', createdBy: 'root', scope: ['users:read'] },
      allowed({ type: 'personal', user: 'alice', createdBy: 'user:root', scope: ['users:read'] })],
    ['admin: anything, as asked', ADMIN, { type: 'bot', role: 'boss', org: 'globex', rateLimit: '5/1s', expiresInMs: 999 * DAY },
      allowed({ type: 'bot', role: 'boss', org: 'globex', rateLimit: '5/1s', expiresInMs: 999 * DAY, createdBy: undefined, expiresWithinMs: undefined })],
    ['org: a scope beyond its grants', ORG, { type: 'bot', role: 'reader', scope: ['orders:read'] },
      refused({ kind: 'forbidden', message: scopeWhy('orders:read'), needs: 'keygate:admin', details: [{ field: 'scope', reason: scopeWhy('orders:read') }], audit: 'denied' })],
    [
      'org: a rate limit',
      ORG,
      { type: 'bot', role: 'reader', rateLimit: '5/1s' },
      refused({
        kind: 'forbidden',
        message: 'only an admin sets a key\'s rate limit',
        needs: 'keygate:admin',
        audit: 'denied'
      })
    ],
    [
      'org: another creator',
      ORG,
      { type: 'bot', role: 'reader', createdBy: 'alice' },
      refused({
        kind: 'forbidden',
        message: 'only an admin records another user as a key\'s creator',
        needs: 'keygate:admin'
      })
    ],
    [
      'org: itself as creator',
      ORG,
      { type: 'bot', role: 'reader', createdBy: 'olga' },
      allowed({ createdBy: 'user:olga' })
    ],
    ['org: a personal key of another user', ORG, { type: 'personal', user: 'alice' },
      refused({ kind: 'forbidden', message: PERSONAL_KEY_REFUSAL, needs: 'keygate:admin', details: [{ field: 'user', reason: PERSONAL_KEY_REFUSAL }], audit: 'denied' })],
    ['org: a personal key of another org\'s user: as if missing', ORG, { type: 'personal', user: 'gina' },
      refused({ kind: 'not_found', message: 'user "gina" is not in org acme', details: [{ field: 'user', reason: 'user "gina" does not exist' }], audit: 'denied' })],
    ['org: a personal key of a missing user', ORG, { type: 'personal', user: 'ghost' },
      refused({ kind: 'not_found', message: 'user "ghost" does not exist', details: [{ field: 'user', reason: 'user "ghost" does not exist' }], audit: 'denied' })],
    [
      'org: its own personal key',
      ORG,
      { type: 'personal', name: 'mine' },
      allowed({ type: 'personal', user: 'olga', name: 'mine', createdBy: 'user:olga', scope: undefined })
    ],
    ['org: a BOT key in another org', ORG, { type: 'bot', role: 'reader', org: 'globex' },
      refused({ kind: 'forbidden', message: 'BOT keys are created in the caller\'s own org (acme) only', needs: 'keygate:admin', audit: 'denied' })],
    ['org: a BOT key with a broader role', ORG, { type: 'bot', role: 'boss' },
      refused({ kind: 'forbidden', message: 'role "boss" is not within the caller\'s own permissions (no escalation through a BOT key)', audit: 'denied' })],
    [
      'org: a BOT key with a missing role, refused alike',
      ORG,
      { type: 'bot', role: 'ghost' },
      refused({ kind: 'forbidden', message: /role "ghost" is not within/ })
    ],
    [
      'org: a BOT key without a role',
      ORG,
      { type: 'bot' },
      refused({ kind: 'invalid', message: 'a BOT key needs a role' })
    ],
    ['org: a BOT key outliving the self-service cap', ORG, { type: 'bot', role: 'reader', expiresInMs: MAX + 1 },
      refused({ kind: 'invalid', message: 'a BOT key created without keygate:admin expires within 90d at most', details: [{ field: 'expires_in', reason: /within 90d/ }], audit: 'error' })],
    ['org: a BOT key', ORG, { type: 'bot', role: 'writer', expiresInMs: DAY },
      allowed({ type: 'bot', role: 'writer', org: 'acme', expiresInMs: DAY, expiresWithinMs: MAX, createdBy: 'user:olga' })],
    [
      'org BOT key: no personal key of its own',
      ORG_BOT,
      { type: 'personal' },
      refused({ kind: 'invalid', message: 'a personal key needs a user' })
    ],
    [
      'org BOT key: a BOT key, no creator',
      ORG_BOT,
      { type: 'bot', role: 'reader' },
      allowed({ org: 'acme', createdBy: undefined })
    ],
    ['self: a personal key of another user', SELF, { type: 'personal', user: 'alice' },
      refused({ kind: 'forbidden', message: 'keygate:keys:self creates personal keys for its own user (sam) only', needs: 'keygate:org:admin', audit: 'denied' })],
    [
      'self: its own personal key, its role whole',
      SELF,
      { type: 'personal' },
      allowed({ user: 'sam', scope: undefined, createdBy: 'user:sam' })
    ],
    [
      'self, scoped narrower than its role: the key no wider',
      SCOPED_SELF,
      { type: 'personal' },
      allowed({ user: 'sam', scope: ['keygate:keys:self'] })
    ],
    [
      'self: a BOT key within its grants',
      SELF,
      { type: 'bot', role: 'reader' },
      allowed({ org: 'acme', expiresWithinMs: MAX })
    ],
    [
      'self: a BOT key beyond them',
      SELF,
      { type: 'bot', role: 'writer' },
      refused({ kind: 'forbidden', needs: 'keygate:org:admin' })
    ]
  ]
  for (const [what, s, r, expected] of rows) judge(t, verdict(() => keyToCreate(s, snap, r, MAX)), expected, what)
  t.equal(
    keyCreationTarget(SELF, { type: 'personal' }),
    'user:sam',
    'the audit target: the caller\'s own user by default'
  )
  t.equal(keyCreationTarget(ADMIN, { type: 'bot', role: 'reader' }), 'role:reader')
})

t.test('decideKeyCreation: the scope first, then references, then the record', async (t) => {
  const o = { selfServiceMaxTtlMs: MAX, actor: 'key:OlgaKey', now: NOW }
  const rows: Array<[string, AdminScope, KeyRequest, unknown]> = [
    [
      'a broader, missing role with a long name: the scope answers',
      ORG,
      { type: 'bot', role: 'ghost', name: 'x'.repeat(201) },
      refused({ kind: 'forbidden' })
    ],
    [
      'a missing role with a long name: the reference answers',
      ADMIN,
      { type: 'bot', role: 'ghost', org: 'acme', name: 'x'.repeat(201) },
      refused({ kind: 'not_found' })
    ],
    [
      'a long name alone: the record answers',
      ADMIN,
      { type: 'bot', role: 'reader', org: 'acme', name: 'x'.repeat(201) },
      refused({ kind: 'invalid', message: /longer than 200/ })
    ],
    ['an org admin\'s BOT key: capped, its creator recorded, a warning for an org without record', ORG, { type: 'bot', role: 'reader' },
      allowed({ org: 'acme', warnings: [], record: { created_by: 'user:olga', expires_at: '2027-04-01T00:00:00Z' } })],
    ['an admin\'s BOT key in an org without record', ADMIN, { type: 'bot', role: 'reader', org: 'newco' },
      allowed({ org: 'newco', warnings: [{ field: 'org' }], record: { created_by: 'key:OlgaKey' } })]
  ]
  for (const [what, s, r, expected] of rows) judge(t, verdict(() => decideKeyCreation(s, snap, r, o)), expected, what)
})
