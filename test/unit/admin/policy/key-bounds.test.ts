// A user's keys are bounded: a creation past keys.max_per_user live keys is a conflict; dead keys past
// keys.purge_after are dropped.
import t from 'tap'
import { AdminError } from '../../../../src/admin/model/errors.js'
import { decideKeyCount, keysToPurge } from '../../../../src/admin/policy/key-bounds.js'
import type { OwnedKeyState } from '../../../../src/admin/store/key-bounds.js'

const NOW = Date.parse('2027-01-01T00:00:00Z')
const DAY = 86_400_000
const key = (id: string, live: boolean, endedAt?: number): OwnedKeyState =>
  ({ id, live, endedAt, org: 'acme', importedSha256: undefined })

t.test('decideKeyCount: live keys only, up to the cap', async (t) => {
  const owned = [key('A', true), key('B', true), key('C', false, NOW - DAY), key('D', false)]
  t.doesNotThrow(() => { decideKeyCount('dana', owned, 3) }, 'two live of three: one more allowed')
  const refused = (() => {
    try {
      decideKeyCount('dana', owned, 2)
    } catch (err: unknown) {
      return err
    }
    return undefined
  })()
  t.ok(refused instanceof AdminError, 'two live of two: refused')
  t.match(refused, { kind: 'conflict', details: [{ field: 'user', reason: /owns 2 live keys.*keys\.max_per_user/ }] })
})

t.test('keysToPurge: dead keys whose end is past the retention; an unknown end is kept', async (t) => {
  const owned = [
    key('live', true),
    key('old', false, NOW - 91 * DAY),
    key('exactly', false, NOW - 90 * DAY),
    key('recent', false, NOW - 89 * DAY),
    key('unknown', false)
  ]
  t.same(keysToPurge(owned, 90 * DAY, NOW).map((k) => k.id), ['old', 'exactly'])
})
