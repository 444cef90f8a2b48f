// Changes to an existing key, decided over a snapshot: revoke, restrict, its own limit, rotate.
import t from 'tap'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import {
  decideKeyLimit,
  decideRestriction,
  decideRevoke,
  decideRotation,
  type KeyRestrictionChange
} from '../../../../src/admin/policy/key-changes.js'
import { PERSONAL_KEY_REFUSAL } from '../../../../src/admin/policy/scope-rules.js'
import { ADMIN, allowed, judge, ORG, refused, SELF, verdict, world } from '../../../helpers/admin-policy.js'

const DAY = 86_400_000
const NOW = Date.parse('2027-01-01T00:00:00Z')
const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')
const snap = world({
  keys: {
    'odd-key': { type: 'bot', org: 'acme', role: 'reader' },
    'limited-key': { type: 'bot', org: 'acme', role: 'reader', status: 'active', rate_limit: '5/1s' },
    'narrow-key': {
      type: 'bot',
      org: 'acme',
      role: 'reader',
      status: 'active',
      scope: 'users:read',
      allowed_cidrs: '10.0.0.0/8'
    },
    'expired-key': { type: 'bot', org: 'acme', role: 'reader', status: 'active', expires_at: '2026-12-31T00:00:00Z' },
    'soon-key': {
      type: 'bot',
      org: 'acme',
      role: 'reader',
      status: 'active',
      expires_at: '2027-01-03T00:00:00Z',
      name: 'ci',
      created_by: 'alice',
      rate_limit: 'fast',
      scope: 'users:read',
      allowed_cidrs: '10.0.0.0/8'
    },
    'weird-key': { type: 'robot', org: 'acme', status: 'active' },
    'orgless-key': { type: 'bot', role: 'reader', status: 'active' },
    'moved-key': { type: 'personal', org: 'globex', user: 'alice', status: 'active' },
    'dee-key': { type: 'personal', org: 'acme', user: 'dee', status: 'active' },
    'capped-key': { type: 'bot', org: 'capped', role: 'reader', status: 'active' },
    'broken-key': { type: 'bot', org: 'broken', role: 'reader', status: 'active' },
    'ghost-role-key': { type: 'bot', org: 'acme', role: 'ghost', status: 'active' },
    'lost-user-key': { type: 'personal', org: 'acme', user: 'ghost', status: 'active' }
  }
})

t.test('decideRevoke: a missing key is 404, a revoked one unchanged; a narrower caller only a key it manages', async (t) => {
  const rows: Array<[AdminScope, string, unknown]> = [
    [ADMIN, 'alice-key', allowed({ changed: true, org: 'acme', from: 'active' })],
    [ADMIN, 'old-key', allowed({ changed: false })],
    [ADMIN, 'ghost', refused({ kind: 'not_found', message: 'key "ghost" does not exist', audit: 'error' })],
    [ADMIN, 'odd-key', refused({ kind: 'not_found', message: 'key "odd-key" does not exist' })],
    [
      ORG,
      'globex-bot',
      refused({ kind: 'not_found', message: 'key "globex-bot" is not in org acme', audit: 'denied' })
    ],
    [ORG, 'bot-boss', refused({ kind: 'forbidden', audit: 'denied' })],
    [ORG, 'alice-key', allowed({ changed: true })],
    [SELF, 'bot-reader', allowed({ changed: true })],
    [SELF, 'alice-key', refused({ kind: 'not_found', audit: 'denied' })]
  ]
  for (const [s, id, expected] of rows) judge(t, verdict(() => decideRevoke(s, snap, id)), expected, `${s.scope} ${id}`)
})

t.test('decideRestriction: a list sets, null removes, undefined keeps; within the caller\'s grants', async (t) => {
  const rows: Array<[string, AdminScope, string, KeyRestrictionChange, unknown]> = [
    ['set both', ADMIN, 'alice-key', { scope: ['users:read'], allowedCidrs: ['10.0.0.0/8', '::1/128'] }, allowed({
      changed: true,
      org: 'acme',
      next: { scope: 'users:read', allowed_cidrs: '10.0.0.0/8 ::1/128' },
      detail: {
        scope: 'users:read',
        allowed_cidrs: '10.0.0.0/8 ::1/128',
        from_scope: '',
        from_allowed_cidrs: ''
      }
    })],
    ['remove one, keep the other', ADMIN, 'narrow-key', { scope: null }, allowed({
      changed: true,
      next: { scope: null, allowed_cidrs: '10.0.0.0/8' },
      detail: {
        scope: '',
        allowed_cidrs: '10.0.0.0/8',
        from_scope: 'users:read',
        from_allowed_cidrs: '10.0.0.0/8'
      }
    })],
    ['as it is', ADMIN, 'narrow-key', { scope: ['users:read'] }, allowed({ changed: false })],
    [
      'a bad entry before the key is looked for',
      ADMIN,
      'ghost',
      { allowedCidrs: ['nope'] },
      refused({ kind: 'invalid', details: [{ field: 'allowed_cidrs' }] })
    ],
    [
      'a missing key',
      ADMIN,
      'ghost',
      { scope: ['users:read'] },
      refused({ kind: 'not_found', message: 'key "ghost" does not exist' })
    ],
    [
      'org: a scope beyond its grants',
      ORG,
      'alice-key',
      { scope: ['orders:read'] },
      refused({ kind: 'forbidden', details: [{ field: 'scope' }], audit: 'denied' })
    ],
    ['org: its whole role back, within its grants', ORG, 'narrow-key', { scope: null }, allowed({ changed: true })],
    [
      'org: a key it does not manage',
      ORG,
      'bot-boss',
      { allowedCidrs: ['10.0.0.0/8'] },
      refused({ kind: 'forbidden', message: /acts with role "boss"/ })
    ],
    ['self: its own user\'s key', SELF, 'sam-key', { allowedCidrs: ['10.0.0.0/8'] }, allowed({ changed: true })],
    [
      'self: its BOT key\'s whole role, within its grants',
      SELF,
      'bot-reader',
      { scope: null },
      allowed({ changed: false })
    ]
  ]
  for (const [what, s, id, change, expected] of rows) {
    judge(
      t,
      verdict(() => decideRestriction(s, snap, id, change)),
      expected,
      what
    )
  }
})

t.test('decideKeyLimit: admin only; a limit in the grammar; null removes; the same is unchanged', async (t) => {
  const rows: Array<[string, AdminScope, string, string | null, unknown]> = [
    [
      'set',
      ADMIN,
      'alice-key',
      '5/1s',
      allowed({ changed: true, org: 'acme', detail: { rate_limit: '5/1s', from: '' } })
    ],
    ['change', ADMIN, 'limited-key', '9/1s', allowed({ changed: true, detail: { rate_limit: '9/1s', from: '5/1s' } })],
    ['remove', ADMIN, 'limited-key', null, allowed({ changed: true, detail: { rate_limit: '', from: '5/1s' } })],
    ['the same', ADMIN, 'limited-key', '5/1s', allowed({ changed: false })],
    ['remove none', ADMIN, 'alice-key', null, allowed({ changed: false })],
    [
      'a malformed limit first',
      ADMIN,
      'ghost',
      'fast',
      refused({ kind: 'invalid', message: /invalid rate limit "fast"/ })
    ],
    ['a missing key', ADMIN, 'ghost', '5/1s', refused({ kind: 'not_found', message: 'key "ghost" does not exist' })],
    [
      'an org admin',
      ORG,
      'alice-key',
      '5/1s',
      refused({
        kind: 'forbidden',
        message: 'a key\'s own rate limit needs keygate:admin',
        needs: 'keygate:admin',
        audit: 'denied'
      })
    ]
  ]
  for (const [what, s, id, limit, expected] of rows) {
    judge(
      t,
      verdict(() => decideKeyLimit(s, snap, id, limit)),
      expected,
      what
    )
  }
})

t.test('decideRotation: an active key\'s replacement, the same in all but its secret, within the caps', async (t) => {
  const o = { selfServiceMaxTtlMs: 90 * DAY, actor: 'cli:root', now: NOW }
  const grace = 3_600_000
  const rows: Array<[string, AdminScope, string, unknown]> = [
    ['a missing key', ADMIN, 'ghost', refused({ kind: 'not_found', message: 'key "ghost" does not exist' })],
    [
      'a revoked key',
      ADMIN,
      'old-key',
      refused({ kind: 'conflict', message: 'key "old-key" is revoked; only an active key can be rotated' })
    ],
    [
      'a key with no status',
      ADMIN,
      'odd-key',
      refused({ kind: 'conflict', message: 'key "odd-key" is in an unknown state; only an active key can be rotated' })
    ],
    [
      'an expired key',
      ADMIN,
      'expired-key',
      refused({ kind: 'conflict', message: 'key "expired-key" has expired; create a new key instead' })
    ],
    [
      'an unknown type',
      ADMIN,
      'weird-key',
      refused({ kind: 'conflict', message: 'key "weird-key" has an unknown type "robot"' })
    ],
    ['no org', ADMIN, 'orgless-key', refused({ kind: 'conflict', message: 'key "orgless-key" has no org' })],
    ['its user left its org', ADMIN, 'moved-key', refused({
      kind: 'conflict',
      message: 'key "moved-key": the user is no longer in the key\'s org (globex); create a new key for the user instead',
      details: [{
        field: 'user',
        reason: 'the user is no longer in the key\'s org'
      }]
    })],
    ['its user is deactivated', ADMIN, 'dee-key', refused({ kind: 'conflict', message: 'user "dee" is deactivated' })],
    [
      'its user is gone',
      ADMIN,
      'lost-user-key',
      refused({ kind: 'not_found', message: 'user "ghost" does not exist' })
    ],
    [
      'its role is gone',
      ADMIN,
      'ghost-role-key',
      refused({ kind: 'not_found', message: 'role "ghost" does not exist' })
    ],
    [
      'a malformed key policy',
      ADMIN,
      'broken-key',
      refused({ kind: 'conflict', message: /malformed key_max_ttl "soon"/ })
    ],
    ['a personal key', ADMIN, 'alice-key', allowed({
      org: 'acme',
      record: {
        type: 'personal',
        org: 'acme',
        name: 'laptop',
        status: 'active',
        created_at: iso(NOW),
        created_by: 'cli:root',
        user: 'alice',
        replaces: 'alice-key'
      },
      replacesExpiresAt: iso(NOW + grace)
    })],
    ['its expiry, creator, scope and addresses carried over; a malformed limit not; its grace ends with it', ADMIN, 'soon-key', allowed({
      record: {
        expires_at: '2027-01-03T00:00:00Z',
        created_by: 'user:alice',
        name: 'ci',
        scope: 'users:read',
        allowed_cidrs: '10.0.0.0/8',
        rate_limit: undefined
      },
      input: { scope: ['users:read'], allowedCidrs: ['10.0.0.0/8'] },
      replacesExpiresAt: iso(NOW + grace)
    })],
    ['a limit carried over', ADMIN, 'limited-key', allowed({ record: { rate_limit: '5/1s', expires_at: undefined } })],
    ['the org\'s key policy now', ADMIN, 'capped-key', allowed({ record: { expires_at: iso(NOW + 30 * DAY) } })],
    [
      'an org admin\'s BOT key: within the self-service cap',
      ORG,
      'bot-reader',
      allowed({ record: { expires_at: iso(NOW + 90 * DAY) } })
    ],
    [
      'an org admin: another user\'s personal key',
      ORG,
      'alice-key',
      refused({ kind: 'forbidden', message: PERSONAL_KEY_REFUSAL, audit: 'denied' })
    ],
    [
      'a self principal: a BOT key',
      SELF,
      'bot-reader',
      refused({ kind: 'forbidden', message: 'rotating a BOT key needs keygate:org:admin' })
    ],
    [
      'a self principal: its own personal key, no cap',
      SELF,
      'sam-key',
      allowed({ record: { user: 'sam', expires_at: undefined } })
    ]
  ]
  for (const [what, s, id, expected] of rows) {
    judge(
      t,
      verdict(() => decideRotation(s, snap, id, grace, o)),
      expected,
      what
    )
  }
  const long = verdict(() => decideRotation(ADMIN, snap, 'soon-key', 10 * DAY, o))
  t.equal(
    long.ok && long.value.replacesExpiresAt,
    '2027-01-03T00:00:00Z',
    'a grace past the old key\'s own expiry ends with it'
  )
})
