// How the policy refuses: by scope (audited as denied) or for the input and the state (as error).
import t from 'tap'
import { AdminError } from '../../../../src/admin/model/errors.js'
import { denied, denyingReads, neededBy, refuseAny, type Problem } from '../../../../src/admin/policy/refusals.js'
import { ADMIN, allowed, judge, ORG, refused, SELF, verdict } from '../../../helpers/admin-policy.js'

t.test('denied: a 403 names what would allow it, by default the next scope up; a 404 names nothing', async (t) => {
  t.equal(neededBy(ORG), 'keygate:admin')
  t.equal(neededBy(SELF), 'keygate:org:admin')
  t.equal(neededBy(ADMIN), 'keygate:admin')
  const rows: Array<[string, () => never, unknown]> = [
    [
      'org, forbidden',
      () => { throw denied(ORG, 'forbidden', 'no') },
      refused({ kind: 'forbidden', message: 'no', needs: 'keygate:admin', details: undefined, audit: 'denied' })
    ],
    [
      'self, forbidden',
      () => { throw denied(SELF, 'forbidden', 'no') },
      refused({ kind: 'forbidden', needs: 'keygate:org:admin', audit: 'denied' })
    ],
    [
      'named',
      () => { throw denied(SELF, 'forbidden', 'no', 'keygate:admin', [{ field: 'scope', reason: 'no' }]) },
      refused({ needs: 'keygate:admin', details: [{ field: 'scope', reason: 'no' }] })
    ],
    [
      'not found',
      () => { throw denied(ORG, 'not_found', 'gone', 'keygate:admin') },
      refused({ kind: 'not_found', needs: undefined, audit: 'denied' })
    ]
  ]
  for (const [what, fn, expected] of rows) judge(t, verdict(fn), expected, what)
})

t.test('denyingReads: inside a write, a narrower caller\'s 404 is a refusal by scope; an admin\'s stays an error', async (t) => {
  const missing = (): never => {
    throw new AdminError(
      'user "x" does not exist',
      'not_found',
      undefined,
      [{ field: 'user', reason: 'gone' }]
    )
  }
  const rows: Array<[string, () => unknown, unknown]> = [
    [
      'org: a 404',
      () => denyingReads(ORG, missing),
      refused({
        kind: 'not_found',
        message: 'user "x" does not exist',
        details: [{ field: 'user', reason: 'gone' }],
        audit: 'denied'
      })
    ],
    ['self: a 404', () => denyingReads(SELF, missing), refused({ audit: 'denied' })],
    ['admin: a 404', () => denyingReads(ADMIN, missing), refused({ kind: 'not_found', audit: 'error' })],
    [
      'org: another refusal as it is',
      () => denyingReads(ORG, () => { throw new AdminError('bad', 'invalid') }),
      refused({ kind: 'invalid', audit: 'error' })
    ],
    ['org: an answer', () => denyingReads(ORG, () => 7), allowed(7)]
  ]
  for (const [what, fn, expected] of rows) judge(t, verdict(fn), expected, what)
  t.throws(
    () => denyingReads(ORG, () => { throw new Error('redis') }),
    { message: 'redis' },
    'anything else is rethrown'
  )
})

t.test('refuseAny: every problem at once; a malformed field (400) before a missing record (404) before a state (409)', async (t) => {
  const p = (kind: Problem['kind'], field?: string): Problem => field === undefined
    ? { reason: `${kind} problem`, kind }
    : {
        field,
        reason: `${kind} ${field}`,
        kind
      }
  const rows: Array<[string, Problem[], unknown]> = [
    ['none', [], allowed()],
    [
      'one conflict',
      [p('conflict', 'user')],
      refused({
        kind: 'conflict',
        message: 'conflict user',
        details: [{ field: 'user', reason: 'conflict user' }],
        audit: 'error'
      })
    ],
    [
      'a conflict and a missing record',
      [p('conflict', 'user'), p('not_found', 'role')],
      refused({ kind: 'not_found', message: 'conflict user; not_found role' })
    ],
    [
      'all three',
      [p('conflict', 'user'), p('not_found', 'role'), p('invalid', 'org')],
      refused({ kind: 'invalid', details: [{ field: 'user' }, { field: 'role' }, { field: 'org' }] })
    ],
    ['a problem at no field', [p('invalid')], refused({ details: [{ reason: 'invalid problem' }] })]
  ]
  for (const [what, problems, expected] of rows) judge(t, verdict(() => { refuseAny(problems) }), expected, what)
  const noField = verdict(() => { refuseAny([p('invalid')]) })
  t.notOk(
    !noField.ok && noField.refused.details?.[0] !== undefined && 'field' in noField.refused.details[0],
    'no field when there is none'
  )
})
