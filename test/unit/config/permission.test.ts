/**
 * One permission grammar for rules (the configuration, `config check`) and for what
 * roles grant (every registry write): lower case `resource:action`; a role may also
 * grant `resource:*` and `*`.
 */
import t from 'tap'
import { GRANT, grantProblems, PERMISSION_PATTERN } from '../../../src/config/permission.js'
import { configProblems, MINIMAL_CONFIG } from '../../helpers/config.js'

const RULE = new RegExp(PERMISSION_PATTERN)

const CASES: Array<[string, { rule: boolean, grant: boolean }]> = [
  ['users:read', { rule: true, grant: true }],
  ['billing.v2:invoices:read', { rule: true, grant: true }],
  ['keygate:org:admin', { rule: true, grant: true }],
  ['a_b-c:d.e', { rule: true, grant: true }],
  ['users:*', { rule: false, grant: true }],
  ['billing:invoices:*', { rule: false, grant: true }],
  ['*', { rule: false, grant: true }],
  ['foo', { rule: false, grant: false }],
  ['USERS:READ', { rule: false, grant: false }],
  ['Users:read', { rule: false, grant: false }],
  ['users:', { rule: false, grant: false }],
  [':read', { rule: false, grant: false }],
  ['users::read', { rule: false, grant: false }],
  ['users read', { rule: false, grant: false }],
  ['users:re*d', { rule: false, grant: false }],
  ['*:read', { rule: false, grant: false }],
  ['', { rule: false, grant: false }]
]

t.test('the grammar, for a rule and for a role', async (t) => {
  for (const [p, want] of CASES) {
    t.equal(RULE.test(p), want.rule, `rule "${p}": ${want.rule ? 'fine' : 'refused'}`)
    t.equal(GRANT.test(p), want.grant, `role "${p}": ${want.grant ? 'fine' : 'refused'}`)
  }
})

t.test('grantProblems names every bad permission, and only those', async (t) => {
  t.same(grantProblems(['users:read', 'users:*', '*']), [])
  t.same(grantProblems(['foo', 'users:read', 'USERS:READ']), [
    'invalid permission "foo" (expected resource:action, resource:* or *, in lower case)',
    'invalid permission "USERS:READ" (expected resource:action, resource:* or *, in lower case)'
  ])
})

t.test('config check applies the same grammar to a rule\'s permissions', async (t) => {
  const rule = (permission: string): string => `${MINIMAL_CONFIG}\nrules:\n  - { method: GET, path: /api/v1/users, permissions: ["${permission}"] }\n`
  t.same(configProblems(rule('users:read')), [], 'users:read is fine')
  for (const bad of ['USERS:READ', 'foo', 'users:*']) {
    const problems = configProblems(rule(bad))
    t.equal(problems.length, 1, `"${bad}" is refused`)
    t.match(problems[0], /^rules\[0\]\.permissions\[0\]: must be resource:action, in lower case/)
  }
})
