import t from 'tap'
import { BlockedBuckets } from '../../../src/ratelimit/blocked.js'
import { parseRateLimit, type RateLimit } from '../../../src/config/rate-limit.js'

const limit = (text: string): RateLimit => parseRateLimit(text) as RateLimit

t.test('a bucket is blocked until its reset, under the limit it was refused under', async (t) => {
  const b = new BlockedBuckets()
  b.block('k1', limit('5/1s'), 1500, 1000)
  t.equal(b.remaining('k1', limit('5/1s'), 1000), 500, 'blocked: 500 ms left')
  t.equal(b.remaining('k1', limit('5/1s'), 1499), 1)
  t.equal(b.remaining('k2', limit('5/1s'), 1000), 0, 'another bucket is not')
  t.equal(b.remaining('k1', limit('50/1s'), 1000), 0, 'an edited limit is not held to the old block')
  t.equal(b.size(1000), 1)
  t.equal(b.remaining('k1', limit('5/1s'), 1500), 0, 'over at its reset')
  t.equal(b.size(1500), 0, 'and forgotten')
})

t.test('bounded: expired blocks go first, then the oldest', async (t) => {
  const b = new BlockedBuckets(3)
  const l = limit('1/1s')
  b.block('a', l, 1100, 1000)
  b.block('b', l, 5000, 1000)
  b.block('c', l, 5000, 1000)
  b.block('d', l, 5000, 1200) // 'a' has expired: it makes room
  t.same(['a', 'b', 'c', 'd'].map((n) => b.remaining(n, l, 1200) > 0), [false, true, true, true])
  b.block('e', l, 5000, 1300) // none expired: the oldest ('b') goes
  t.same(['b', 'c', 'd', 'e'].map((n) => b.remaining(n, l, 1300) > 0), [false, true, true, true])
  t.equal(b.size(1300), 3)
})
