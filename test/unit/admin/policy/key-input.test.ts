// The shape of a key write in itself: owners by type, name and creator, scope and addresses.
import t from 'tap'
import {
  checkKeyExclusions,
  checkKeyLabels,
  checkKeyRequirements,
  checkKeyRestriction,
  keyOwnerProblem,
  type KeyOwnerFields
} from '../../../../src/admin/policy/key-input.js'
import { allowed, judge, refused, verdict } from '../../../helpers/admin-policy.js'

t.test('owner fields: a personal key takes its user\'s org and role; a BOT key has a role and an org, no user', async (t) => {
  const personalNoOrg = 'a personal key takes its org and role from its user: no role or org'
  const rows: Array<[KeyOwnerFields, string | undefined, string | undefined]> = [
    // input                                             exclusions            requirements
    [{ type: 'personal', user: 'alice' }, undefined, undefined],
    [{ type: 'personal', user: 'alice', role: 'r' }, personalNoOrg, undefined],
    [{ type: 'personal', user: 'alice', org: 'o' }, personalNoOrg, undefined],
    [{ type: 'personal' }, undefined, 'a personal key needs a user'],
    [{ type: 'bot', role: 'r', org: 'o' }, undefined, undefined],
    [{ type: 'bot', role: 'r', org: 'o', user: 'alice' }, 'a BOT key has no user', undefined],
    [{ type: 'bot', role: 'r' }, undefined, 'a BOT key needs an org'],
    [{ type: 'bot', org: 'o' }, undefined, 'a BOT key needs a role'],
    [{ type: 'bot' }, undefined, 'a BOT key needs a role and an org']
  ]
  for (const [input, exclusion, requirement] of rows) {
    const what = JSON.stringify(input)
    judge(
      t,
      verdict(() => { checkKeyExclusions(input) }),
      exclusion === undefined ? allowed() : refused({ kind: 'invalid', message: exclusion, audit: 'error' }),
      `exclusions ${what}`
    )
    judge(
      t,
      verdict(() => { checkKeyRequirements(input) }),
      requirement === undefined ? allowed() : refused({ kind: 'invalid', message: requirement }),
      `requirements ${what}`
    )
    t.equal(keyOwnerProblem(input)?.message, exclusion ?? requirement, `keyOwnerProblem ${what}: the exclusions first`)
  }
})

t.test('labels: a name of at most 200 characters, a typed creator', async (t) => {
  const rows: Array<[{ name?: string, createdBy?: string }, unknown]> = [
    [{}, allowed()],
    [{ name: 'x'.repeat(200), createdBy: 'user:alice' }, allowed()],
    [{ createdBy: 'key:AbCdEfGhIjKlMnOp' }, allowed()],
    [{ createdBy: 'admin-token' }, allowed()],
    [{ name: 'x'.repeat(201) }, refused({ kind: 'invalid', message: 'the key name is longer than 200 characters' })],
    [
      { createdBy: 'alice' },
      refused({
        kind: 'invalid',
        message: 'invalid creator "alice" (expected user:<id>, key:<id>, cli:<name> or admin-token)'
      })
    ],
    [{ createdBy: 'user:' }, refused({ kind: 'invalid', message: /invalid creator "user:"/ })]
  ]
  for (const [input, expected] of rows) {
    judge(
      t,
      verdict(() => { checkKeyLabels(input) }),
      expected,
      JSON.stringify(input).slice(0, 60)
    )
  }
})

t.test('restrictions: a scope in the permission grammar, addresses as CIDRs, neither empty nor over 256, every bad entry named', async (t) => {
  const rows: Array<[string, { scope?: string[], allowedCidrs?: string[] }, unknown]> = [
    ['none given', {}, allowed()],
    [
      'good ones',
      { scope: ['users:read', 'orders:*'], allowedCidrs: ['10.0.0.0/8', '2001:db8::/32', '192.0.2.1'] },
      allowed()
    ],
    [
      'an empty scope',
      { scope: [] },
      refused({
        kind: 'invalid',
        message: 'an empty scope: give at least one entry, or none to remove it',
        details: [{ field: 'scope' }]
      })
    ],
    [
      'an empty address list',
      { allowedCidrs: [] },
      refused({
        details: [{
          field: 'allowed_cidrs',
          reason: 'an empty allowed_cidrs: give at least one entry, or none to remove it'
        }]
      })
    ],
    [
      'too many',
      { scope: Array.from({ length: 257 }, (_, i) => `r${i}:read`) },
      refused({ details: [{ field: 'scope', reason: 'more than 256 entries in scope' }] })
    ],
    ['bad entries of both, each named', { scope: ['Users', 'users:read'], allowedCidrs: ['nope', '10.0.0.0/33'] }, refused({
      kind: 'invalid',
      details: [
        { field: 'scope', reason: /invalid permission "Users"/ },
        { field: 'allowed_cidrs', reason: /invalid address "nope"/ },
        { field: 'allowed_cidrs', reason: /invalid address "10.0.0.0\/33"/ }
      ]
    })]
  ]
  for (const [what, input, expected] of rows) judge(t, verdict(() => { checkKeyRestriction(input) }), expected, what)
})
