/**
 * A rate-limited answer said `Retry-After: 21` for a `6/20s` limit: the conservative
 * window counted a slot until the slot's end plus a period. Retry-After and
 * RateLimit-Reset are now never more than the limit's period, and a client that waits
 * as told is let through.
 */
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'

t.test('Retry-After and RateLimit-Reset never exceed the period', async (t) => {
  const gw = await startGateway(t)
  const k = await gw.fixtures.personalKey('alice')
  await gw.client.hset(gw.fixtures.keys.key(k.id), 'rate_limit', '6/20s')
  const seen: Array<[number, string | undefined, string | undefined]> = []
  for (let i = 0; i < 9; i++) {
    const res = await gw.get('/api/v1/users', k.key)
    seen.push([res.status, res.headers['retry-after'] as string | undefined, res.headers['ratelimit-reset'] as string | undefined])
  }
  t.same(seen.map(([s]) => s), [200, 200, 200, 200, 200, 200, 429, 429, 429], 'six allowed, then refused')
  for (const [status, retryAfter, reset] of seen) {
    t.ok(Number(reset) >= 1 && Number(reset) <= 20, `${status}: RateLimit-Reset ${String(reset)} within 1..20`)
    if (status === 429) t.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= 20, `429: Retry-After ${String(retryAfter)} within 1..20`)
  }
})
