// Allowances (admin only): a quota set or removed, credits added; every value checked.
import t from 'tap'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import { decideMeter, type MeterChange } from '../../../../src/admin/policy/meters.js'
import { ADMIN, allowed, judge, ORG, refused, SELF, verdict, world } from '../../../helpers/admin-policy.js'

const snap = world({
  keys: { metered: { type: 'bot', org: 'acme', role: 'reader', status: 'active', quota: '10/day', credits: '5' } },
  orgs: { acme: { name: 'Acme', credits: '100' } }
})
const needsAdmin = refused({
  kind: 'forbidden', message: 'an allowance (quota, credits) needs keygate:admin', needs: 'keygate:admin', audit: 'denied'
})

t.test('decideMeter: a quota set, kept or removed; credits added to what was granted', async (t) => {
  const rows: Array<[string, AdminScope, { key: string } | { org: string }, MeterChange, unknown]> = [
    ['a new quota', ADMIN, { key: 'metered' }, { quota: '20/month' }, allowed({
      org: 'acme', quota: { next: '20/month', detail: { quota: '20/month', from: '10/day' } }
    })],
    ['the same quota: nothing to write', ADMIN, { key: 'metered' }, { quota: '10/day' }, allowed({ org: 'acme' })],
    ['removed', ADMIN, { key: 'metered' }, { quota: null }, allowed({
      org: 'acme', quota: { next: null, detail: { quota: '', from: '10/day' } }
    })],
    ['credits added', ADMIN, { key: 'metered' }, { addCredits: 7 }, allowed({
      org: 'acme', credits: { add: 7, detail: { added: '7', credits: '12' } }
    })],
    ['credits to a key that had none', ADMIN, { key: 'bot-reader' }, { addCredits: 3 }, allowed({
      org: 'acme', credits: { add: 3, detail: { added: '3', credits: '3' } }
    })],
    ['an org\'s quota and credits', ADMIN, { org: 'acme' }, { quota: '1000/week', addCredits: 50 }, allowed({
      org: 'acme',
      quota: { next: '1000/week', detail: { quota: '1000/week', from: '' } },
      credits: { add: 50, detail: { added: '50', credits: '150' } }
    })],
    ['an org without a record', ADMIN, { org: 'newco' }, { quota: '5/day' }, allowed({
      org: 'newco', quota: { next: '5/day', detail: { quota: '5/day', from: '' } }
    })],
    ['an org admin, its own org\'s key', ORG, { key: 'metered' }, { addCredits: 1000 }, needsAdmin],
    ['a key\'s holder, its own key', SELF, { key: 'sam-key' }, { quota: '1000000/day' }, needsAdmin],
    ['nothing to change', ADMIN, { key: 'metered' }, {}, refused({ kind: 'invalid', message: /^nothing to change/ })],
    ['a quota of the wrong form', ADMIN, { key: 'metered' }, { quota: '10/year' }, refused({
      kind: 'invalid', message: /invalid quota "10\/year"/, details: [{ field: 'quota', reason: /<count>\/<day\|week\|month>/ }]
    })],
    ['a zero quota', ADMIN, { key: 'metered' }, { quota: '0/day' }, refused({ kind: 'invalid', message: /invalid quota/ })],
    ['no credits added', ADMIN, { key: 'metered' }, { addCredits: 0 }, refused({ kind: 'invalid', message: /invalid credits 0/ })],
    ['credits taken away', ADMIN, { key: 'metered' }, { addCredits: -5 }, refused({ kind: 'invalid', message: /invalid credits -5/ })],
    ['a fraction', ADMIN, { key: 'metered' }, { addCredits: 1.5 }, refused({ kind: 'invalid', message: /invalid credits 1.5/ })],
    ['a key that does not exist', ADMIN, { key: 'nope' }, { addCredits: 1 }, refused({ kind: 'not_found', message: 'key "nope" does not exist' })],
    ['a bad org name', ADMIN, { org: 'bad org' }, { quota: '1/day' }, refused({ kind: 'invalid', message: /invalid org "bad org"/ })]
  ]
  for (const [what, scope, target, change, expected] of rows) {
    judge(t, verdict(() => decideMeter(scope, snap, target, change)), expected, what)
  }
})
