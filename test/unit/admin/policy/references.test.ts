// What a write may refer to, against a snapshot: every problem at once, the worst kind first.
import t from 'tap'
import type { CreateKeyInput } from '../../../../src/admin/policy/key-input.js'
import { keyReferences } from '../../../../src/admin/policy/references.js'
import { allowed, judge, refused, verdict, world } from '../../../helpers/admin-policy.js'

const snap = world()

t.test('keyReferences: every problem at once, the worst kind first; an org with no record warns', async (t) => {
  const rows: Array<[string, CreateKeyInput, unknown]> = [
    ['an active user', { type: 'personal', user: 'alice' }, allowed([])],
    [
      'a deactivated user',
      { type: 'personal', user: 'dee' },
      refused({
        kind: 'conflict',
        message: 'user "dee" is deactivated',
        details: [{ field: 'user', reason: 'user "dee" is deactivated' }]
      })
    ],
    [
      'a missing user',
      { type: 'personal', user: 'ghost' },
      refused({ kind: 'not_found', message: 'user "ghost" does not exist' })
    ],
    [
      'a user id that is no name',
      { type: 'personal', user: 'bad name' },
      refused({ kind: 'invalid', details: [{ field: 'user', reason: /invalid user id "bad name"/ }] })
    ],
    [
      'a missing role',
      { type: 'bot', role: 'ghost', org: 'acme' },
      refused({ kind: 'not_found', details: [{ field: 'role', reason: 'role "ghost" does not exist' }] })
    ],
    ['an org with a record', { type: 'bot', role: 'reader', org: 'acme' }, allowed([])],
    [
      'an org without one',
      { type: 'bot', role: 'reader', org: 'newco' },
      allowed([{
        field: 'org',
        reason: 'org "newco" has no record: it has no name and no org rate limit until one is put'
      }])
    ],
    [
      'a missing creator',
      { type: 'bot', role: 'reader', org: 'acme', createdBy: 'user:ghost' },
      refused({ kind: 'not_found', details: [{ field: 'created_by', reason: 'user "ghost" does not exist' }] })
    ],
    [
      'a deactivated creator is still a creator',
      { type: 'bot', role: 'reader', org: 'acme', createdBy: 'user:dee' },
      allowed([])
    ],
    ['an actor that is no user', { type: 'bot', role: 'reader', org: 'acme', createdBy: 'cli:root' }, allowed([])],
    ['several: invalid first, every one named', { type: 'bot', role: 'ghost', org: 'bad org', createdBy: 'user:ghost' }, refused({
      kind: 'invalid',
      message: /role "ghost" does not exist; invalid org "bad org".*; user "ghost" does not exist/,
      details: [{ field: 'role' }, { field: 'org' }, { field: 'created_by' }]
    })]
  ]
  for (const [what, input, expected] of rows) judge(t, verdict(() => keyReferences(snap, input)), expected, what)
})
