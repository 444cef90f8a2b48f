// A new key's record: its shape, its owner resolved to its org, the caps; and what its creator is shown.
import t from 'tap'
import type { CreateKeyInput } from '../../../../src/admin/policy/key-input.js'
import { createdKeyOf, keyRecord } from '../../../../src/admin/policy/key-records.js'
import { allowed, judge, refused, verdict, world } from '../../../helpers/admin-policy.js'

const DAY = 86_400_000
const NOW = Date.parse('2027-01-01T00:00:00Z')
const snap = world()

t.test('keyRecord: the shape, the owner resolved to its org, the org\'s key policy', async (t) => {
  const o = { actor: 'cli:root', now: NOW }
  const rows: Array<[string, CreateKeyInput, unknown]> = [
    [
      'a long name',
      { type: 'personal', user: 'alice', name: 'x'.repeat(201) },
      refused({ kind: 'invalid', message: 'the key name is longer than 200 characters' })
    ],
    [
      'an untyped creator',
      { type: 'personal', user: 'alice', createdBy: 'root' },
      refused({ kind: 'invalid', message: /invalid creator "root"/ })
    ],
    [
      'a malformed rate limit',
      { type: 'personal', user: 'alice', rateLimit: 'fast' },
      refused({ kind: 'invalid', message: /invalid rate limit "fast"/ })
    ],
    [
      'an empty scope',
      { type: 'personal', user: 'alice', scope: [] },
      refused({ kind: 'invalid', details: [{ field: 'scope', reason: /an empty scope/ }] })
    ],
    [
      'a bad address',
      { type: 'personal', user: 'alice', allowedCidrs: ['nope'] },
      refused({ kind: 'invalid', details: [{ field: 'allowed_cidrs', reason: /invalid address "nope"/ }] })
    ],
    [
      'a user without a role',
      { type: 'personal', user: 'half' },
      refused({ kind: 'conflict', message: 'user "half" has an incomplete record' })
    ],
    [
      'a deactivated user',
      { type: 'personal', user: 'dee' },
      refused({ kind: 'conflict', message: 'user "dee" is deactivated' })
    ],
    [
      'a missing user',
      { type: 'personal', user: 'ghost' },
      refused({ kind: 'not_found', message: 'user "ghost" does not exist' })
    ],
    [
      'an org that is no name',
      { type: 'bot', role: 'reader', org: 'bad org' },
      refused({ kind: 'invalid', message: /invalid org "bad org"/ })
    ],
    [
      'a missing role',
      { type: 'bot', role: 'ghost', org: 'acme' },
      refused({ kind: 'not_found', message: 'role "ghost" does not exist' })
    ],
    ['beyond the org\'s key policy', { type: 'bot', role: 'reader', org: 'capped', expiresInMs: 31 * DAY },
      refused({ kind: 'invalid', message: 'org "capped" lets its keys live 30d at most (key_max_ttl)', details: [{ field: 'expires_in' }] })],
    [
      'no expiry asked, in a capped org: the cap',
      { type: 'bot', role: 'reader', org: 'capped' },
      allowed({ org: 'capped', record: { expires_at: '2027-01-31T00:00:00Z' } })
    ],
    [
      'a shorter creator\'s cap wins',
      { type: 'bot', role: 'reader', org: 'capped', expiresWithinMs: 7 * DAY },
      allowed({ record: { expires_at: '2027-01-08T00:00:00Z' } })
    ],
    ['a malformed key policy', { type: 'bot', role: 'reader', org: 'broken' },
      refused({ kind: 'conflict', message: 'org "broken" has a malformed key_max_ttl "soon"; fix it with keygate orgs put' })],
    ['a personal key: its user\'s org', { type: 'personal', user: 'alice' }, allowed({
      org: 'acme',
      record: {
        type: 'personal',
        org: 'acme',
        name: '',
        status: 'active',
        created_at: '2027-01-01T00:00:00Z',
        created_by: 'cli:root',
        user: 'alice'
      }
    })],
    ['every field', { type: 'bot', role: 'reader', org: 'newco', name: 'ci', createdBy: 'user:alice', expiresInMs: DAY, rateLimit: '5/1s', scope: ['users:read'], allowedCidrs: ['10.0.0.0/8', '::1/128'] }, allowed({
      org: 'newco',
      record: {
        type: 'bot',
        org: 'newco',
        name: 'ci',
        created_by: 'user:alice',
        role: 'reader',
        expires_at: '2027-01-02T00:00:00Z',
        rate_limit: '5/1s',
        scope: 'users:read',
        allowed_cidrs: '10.0.0.0/8 ::1/128'
      }
    })]
  ]
  for (const [what, input, expected] of rows) judge(t, verdict(() => keyRecord(snap, input, o)), expected, what)
  const plain = verdict(() => keyRecord(snap, { type: 'personal', user: 'alice' }, o))
  t.notOk(plain.ok && 'hash' in plain.value.record, 'never a hash: the action adds it')
})

t.test('createdKeyOf: what the creator is shown, once', async (t) => {
  const record = {
    type: 'bot',
    org: 'acme',
    name: 'ci',
    status: 'active',
    created_at: '2027-01-01T00:00:00Z',
    created_by: 'cli:root',
    role: 'reader',
    expires_at: '2027-01-02T00:00:00Z',
    rate_limit: '5/1s',
    scope: 'users:read'
  }
  t.same(createdKeyOf('AbC', 'kg_AbC_secret', record, { scope: ['users:read'] }), {
    id: 'AbC', key: 'kg_AbC_secret', type: 'bot', org: 'acme', name: 'ci', created_at: '2027-01-01T00:00:00Z', role: 'reader', expires_at: '2027-01-02T00:00:00Z', rate_limit: '5/1s', scope: ['users:read']
  })
  t.same(
    Object.keys(createdKeyOf('AbC', 'k', { ...record, user: 'alice' }, {})).slice(0, 6),
    ['id', 'key', 'type', 'org', 'name', 'created_at'],
    'in the order shown'
  )
})
