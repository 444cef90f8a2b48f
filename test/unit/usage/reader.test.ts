// The usage reader's ranges and sums (src/usage/reader.ts), no Redis: a range's buckets,
// every point of a range zero before anything is added, and several series of one range
// summed point by point (an identity's counts: the sum of its keys').
import t from 'tap'
import { addPoints, bucketsOf, usageRange, zeroPoints, type UsageRange } from '../../../src/usage/reader.js'

const HOUR = 3_600_000
const T0 = Date.UTC(2027, 0, 31, 9, 0, 0)

t.test('a range\'s buckets: aligned to the step, its end exclusive', async (t) => {
  t.same(bucketsOf({ from: T0 + 1, to: T0 + 3 * HOUR - 1, step: '1h' }), { from: T0, to: T0 + 3 * HOUR, count: 3, stepMs: HOUR })
  t.same(usageRange({ from: T0 + HOUR, to: T0 }, T0), { field: 'from', reason: 'after to' })
})

t.test('zero points: one a bucket, each at its start, every class 0', async (t) => {
  const range: UsageRange = { from: T0, to: T0 + 3 * HOUR, step: '1h' }
  t.same(zeroPoints(range), [0, 1, 2].map((i) => ({
    t: new Date(T0 + i * HOUR).toISOString(), allowed: 0, refused: 0, limited: 0, errors: 0
  })))
  t.equal(zeroPoints({ from: T0, to: T0 + 2 * 86_400_000, step: '1m' }).length, 2880, '48 h of minutes')
})

t.test('series of one range add up point by point, every class apart', async (t) => {
  const range: UsageRange = { from: T0, to: T0 + 2 * HOUR, step: '1h' }
  const sum = zeroPoints(range)
  const [first, second] = zeroPoints(range)
  const a = [{ ...first, allowed: 3, refused: 1 }, { ...second, limited: 2 }] as ReturnType<typeof zeroPoints>
  const b = [{ ...first, allowed: 4, errors: 5 }, { ...second, allowed: 1, refused: 2 }] as ReturnType<typeof zeroPoints>
  addPoints(sum, a)
  addPoints(sum, b)
  t.same(sum.map(({ allowed, refused, limited, errors }) => [allowed, refused, limited, errors]), [[7, 1, 0, 5], [1, 2, 2, 0]])
  t.same(sum.map((p) => p.t), [first?.t, second?.t], 'the buckets\' times kept')
  addPoints(sum, [{ ...first, allowed: 1 }] as ReturnType<typeof zeroPoints>)
  t.equal(sum[0]?.allowed, 8, 'a shorter series adds to the points it has')
  t.equal(sum[1]?.allowed, 1)
})
