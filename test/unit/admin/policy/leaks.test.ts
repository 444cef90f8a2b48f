// Leaked keys: what a report does to the live key a token is, and where it was found, as kept.
import t from 'tap'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import { checkLeakReporter, leakSource, leakVerdict } from '../../../../src/admin/policy/leaks.js'
import { ADMIN, allowed, judge, ORG, refused, SELF, verdict } from '../../../helpers/admin-policy.js'

t.test('leakVerdict: a key the reporter sees is revoked (once); one it does not see is a false positive, like no key', async (t) => {
  const acme = { type: 'bot', org: 'acme', role: 'boss', status: 'active' }
  const rows: Array<[string, AdminScope, Record<string, string> | undefined, string]> = [
    ['no key', ADMIN, undefined, 'false_positive'],
    ['a record without a status', ADMIN, { type: 'bot', org: 'acme' }, 'false_positive'],
    ['admin: any key', ADMIN, { ...acme, org: 'globex' }, 'revoke'],
    ['admin: revoked already', ADMIN, { ...acme, status: 'revoked' }, 'revoked_already'],
    ['org admin: its org\'s, whatever its role', ORG, acme, 'revoke'],
    ['org admin: another org\'s', ORG, { ...acme, org: 'globex' }, 'false_positive'],
    [
      'org admin: another org\'s, revoked already, still nothing told',
      ORG,
      { ...acme, org: 'globex', status: 'revoked' },
      'false_positive'
    ],
    ['self: its own personal key', SELF, { type: 'personal', org: 'acme', user: 'sam', status: 'active' }, 'revoke'],
    [
      'self: another user\'s',
      SELF,
      { type: 'personal', org: 'acme', user: 'alice', status: 'active' },
      'false_positive'
    ]
  ]
  for (const [what, s, record, expected] of rows) t.equal(leakVerdict(s, record), expected, what)
})

t.test('checkLeakReporter: an admin or an org admin', async (t) => {
  judge(t, verdict(() => { checkLeakReporter(ADMIN) }), allowed(), 'admin')
  judge(t, verdict(() => { checkLeakReporter(ORG) }), allowed(), 'org admin')
  judge(
    t,
    verdict(() => { checkLeakReporter(SELF) }),
    refused({ kind: 'forbidden', message: 'reporting leaked keys needs keygate:org:admin', audit: 'denied' }),
    'self'
  )
})

t.test('leakSource: printable, one line, bounded, no key in it', async (t) => {
  const key = `kg_AbCdEfGhIjKlMnOp_${'s'.repeat(32)}x9Yz1Q`
  const rows: Array<[string, string | RegExp]> = [
    ['https://github.com/acme/app/blob/main/.env', 'https://github.com/acme/app/blob/main/.env'],
    ['  a\nmulti\u0000line\u007f  ', 'amultiline'],
    ['', 'unknown'],
    ['\n\t', 'unknown'],
    ['x'.repeat(2000), 'x'.repeat(1024)]
  ]
  for (const [source, expected] of rows) {
    t.match(
      leakSource(source, 'kg_'),
      expected,
      JSON.stringify(source).slice(0, 40)
    )
  }
  t.notMatch(leakSource(`found ${key} here`, 'kg_'), /s{32}/, 'a key in the source reaches no one')
})
