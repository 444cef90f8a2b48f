// How long a key may live: the org's key policy, the self-service cap, and how a duration is told.
import t from 'tap'
import { capReason, defaultExpiry, formatTtl, keyCapOf, overCap } from '../../../../src/admin/policy/key-expiry.js'
import { allowed, judge, refused, verdict } from '../../../helpers/admin-policy.js'

const DAY = 86_400_000

t.test('keyCapOf: an org\'s key_max_ttl; none without one; a malformed one refuses every key', async (t) => {
  const rows: Array<[Record<string, string> | undefined, unknown]> = [
    [undefined, allowed(undefined)],
    [{}, allowed(undefined)],
    [{ key_max_ttl: '' }, allowed(undefined)],
    [{ key_max_ttl: '90d' }, allowed(90 * DAY)],
    [{ key_max_ttl: '12h', name: 'Acme' }, allowed(12 * 3_600_000)],
    [
      { key_max_ttl: 'soon' },
      refused({
        kind: 'conflict',
        message: 'org "acme" has a malformed key_max_ttl "soon"; fix it with keygate orgs put',
        audit: 'error'
      })
    ],
    [{ key_max_ttl: '0s' }, refused({ kind: 'conflict', message: /malformed key_max_ttl "0s"/ })]
  ]
  for (const [record, expected] of rows) {
    const v = verdict(() => keyCapOf('acme', record))
    judge(t, v, expected, JSON.stringify(record))
    if (v.ok) t.equal(v.value, (expected as { value?: unknown }).value, 'exactly')
  }
})

t.test('the cap\'s refusal names the org and its policy, about the field given', async (t) => {
  t.equal(capReason('acme', 30 * DAY), 'org "acme" lets its keys live 30d at most (key_max_ttl)')
  judge(t, verdict(() => { throw overCap('acme', 30 * DAY, 'expires_at') }), refused({
    kind: 'invalid',
    message: capReason(
      'acme',
      30 * DAY
    ),
    details: [{ field: 'expires_at', reason: capReason('acme', 30 * DAY) }],
    audit: 'error'
  }), 'overCap')
})

t.test('defaultExpiry: no expiry asked means the shortest cap; none without any', async (t) => {
  const rows: Array<[Array<number | undefined>, number | undefined]> = [
    [[], undefined],
    [[undefined, undefined], undefined],
    [[DAY], DAY],
    [[undefined, 7 * DAY], 7 * DAY],
    [[30 * DAY, 7 * DAY], 7 * DAY]
  ]
  for (const [caps, expected] of rows) t.equal(defaultExpiry(...caps), expected, JSON.stringify(caps))
})

t.test('formatTtl: days, hours, minutes when whole, else seconds', async (t) => {
  const rows: Array<[number, string]> = [
    [90 * DAY, '90d'],
    [36 * 3_600_000, '36h'],
    [90 * 60_000, '90m'],
    [61_000, '61s'],
    [1_500, '2s']
  ]
  for (const [ms, text] of rows) t.equal(formatTtl(ms), text, String(ms))
})
