// rate_limits.anonymous (src/ratelimit/anonymous.ts): per client address, in this
// process, the shared limits' sliding window; an IPv6 client counts as its /64.
import t from 'tap'
import { anonymousLimit } from '../../../src/ratelimit/anonymous.js'
import { parseRateLimit } from '../../../src/config/rate-limit.js'

const limit = parseRateLimit('2/10s')
if (limit === undefined) throw new Error('the fixture limit does not parse')
const T = 1_000_000_000

t.test('count per client, refused over it, allowed again once the window moved on', async (t) => {
  const check = anonymousLimit(limit)
  t.same(check('192.0.2.1', T), { allowed: true, limit: 2, remaining: 1, resetS: 10 })
  t.equal(check('192.0.2.1', T + 1).allowed, true)
  const over = check('192.0.2.1', T + 2)
  t.equal(over.allowed, false, 'the third in the window is refused')
  t.ok(!over.allowed && over.reason === 'rate_limited' && over.retryAfterS >= 1, 'rate_limited, with a Retry-After')
  t.equal(check('192.0.2.2', T + 2).allowed, true, 'another client has its own budget')
  t.equal(check('192.0.2.1', T + 11_000).allowed, true, 'after the period')
})

t.test('an IPv6 client is its /64; no address is one bucket', async (t) => {
  const check = anonymousLimit(limit)
  check('2001:db8::1', T)
  check('2001:db8::2', T)
  t.equal(check('2001:db8:0:0:ffff::3', T).allowed, false, 'the same /64')
  check(undefined, T)
  check(undefined, T)
  t.equal(check(undefined, T).allowed, false)
})

t.test('buckets are bounded: the least recently used client goes', async (t) => {
  const check = anonymousLimit(limit, 2)
  check('192.0.2.1', T)
  check('192.0.2.1', T)
  check('192.0.2.2', T)
  check('192.0.2.3', T)
  t.equal(check('192.0.2.1', T).allowed, true, 'its bucket was dropped for a new client')
})
