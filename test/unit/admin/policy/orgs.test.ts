// Org records (admin only): what a put sets and removes, every field checked.
import t from 'tap'
import type { AdminScope } from '../../../../src/admin/model/principal.js'
import { decidePutOrg, type OrgInput } from '../../../../src/admin/policy/orgs.js'
import { ADMIN, allowed, judge, ORG, refused, verdict } from '../../../helpers/admin-policy.js'

t.test('decidePutOrg: a field not given is kept, null removes it; nothing to set is refused', async (t) => {
  const rows: Array<[string, AdminScope, string, OrgInput, unknown]> = [
    [
      'a name and a limit',
      ADMIN,
      'acme',
      { name: 'Acme', rateLimit: '1000/1s' },
      allowed({
        fields: { name: 'Acme', rate_limit: '1000/1s' },
        removed: [],
        detail: { name: 'Acme', rate_limit: '1000/1s' }
      })
    ],
    ['a key policy', ADMIN, 'acme', { keyMaxTtl: '90d' }, allowed({ fields: { key_max_ttl: '90d' }, removed: [] })],
    [
      'both removed',
      ADMIN,
      'acme',
      { rateLimit: null, keyMaxTtl: null },
      allowed({ fields: {}, removed: ['rate_limit', 'key_max_ttl'], detail: { rate_limit: '', key_max_ttl: '' } })
    ],
    [
      'an org admin, even its own',
      ORG,
      'acme',
      { rateLimit: '1/1s' },
      refused({
        kind: 'forbidden',
        message: 'an org\'s record needs keygate:admin',
        needs: 'keygate:admin',
        audit: 'denied'
      })
    ],
    ['a bad org name', ADMIN, 'bad org', { name: 'x' }, refused({ kind: 'invalid', message: /invalid org "bad org"/ })],
    [
      'nothing to set',
      ADMIN,
      'acme',
      {},
      refused({
        kind: 'invalid',
        message: 'nothing to set: give a rate limit, a key max TTL (or none to remove one) or a name'
      })
    ],
    [
      'a bad limit',
      ADMIN,
      'acme',
      { rateLimit: 'fast' },
      refused({ kind: 'invalid', message: /invalid rate limit "fast"/, details: undefined })
    ],
    ['a bad key policy', ADMIN, 'acme', { keyMaxTtl: 'forever' }, refused({
      kind: 'invalid',
      message: 'invalid key_max_ttl "forever" (a duration such as 90d, 24h)',
      details: [{
        field: 'key_max_ttl',
        reason: 'invalid key_max_ttl "forever" (a duration such as 90d, 24h)'
      }]
    })],
    [
      'a zero key policy',
      ADMIN,
      'acme',
      { keyMaxTtl: '0d' },
      refused({ kind: 'invalid', details: [{ field: 'key_max_ttl' }] })
    ],
    [
      'a long name',
      ADMIN,
      'acme',
      { name: 'x'.repeat(201) },
      refused({ kind: 'invalid', message: 'the org name is longer than 200 characters' })
    ],
    ['a name of 200', ADMIN, 'acme', { name: 'x'.repeat(200) }, allowed()]
  ]
  for (const [what, s, org, input, expected] of rows) {
    judge(
      t,
      verdict(() => decidePutOrg(s, org, input)),
      expected,
      what
    )
  }
})
