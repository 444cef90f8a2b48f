import t from 'tap'
import { UnknownKeyLimit } from '../../../src/cache/unknown-key-limit.js'

t.test('a peer gets its burst, then one lookup per 1/per_second', async (t) => {
  const limit = new UnknownKeyLimit({ perSecond: 10, burst: 5, maxPeers: 100 })
  let granted = 0
  for (let i = 0; i < 50; i++) if (limit.take('10.0.0.1', 1000) !== undefined) granted++
  t.equal(granted, 5, 'the burst, no more, at one instant')
  t.equal(limit.take('10.0.0.1', 1099), undefined, '99 ms later: not yet a whole token')
  t.ok(limit.take('10.0.0.1', 1100), '100 ms later: one more')
  t.equal(limit.take('10.0.0.1', 1100), undefined)
  granted = 0
  for (let i = 0; i < 50; i++) if (limit.take('10.0.0.1', 1_000_000) !== undefined) granted++
  t.equal(granted, 5, 'an idle peer refills up to the burst, never past it')
})

t.test('peers have separate budgets', async (t) => {
  const limit = new UnknownKeyLimit({ perSecond: 1, burst: 1, maxPeers: 100 })
  t.ok(limit.take('10.0.0.1', 0))
  t.equal(limit.take('10.0.0.1', 0), undefined)
  t.ok(limit.take('10.0.0.2', 0), 'another address is not affected')
})

t.test('a refunded lookup (the key was not unknown) costs nothing', async (t) => {
  const limit = new UnknownKeyLimit({ perSecond: 1, burst: 2, maxPeers: 100 })
  for (let i = 0; i < 100; i++) {
    const bucket = limit.take('10.0.0.1', 0)
    if (bucket === undefined) { t.fail(`lookup ${i} refused`); return }
    limit.refund(bucket)
  }
  t.ok(limit.take('10.0.0.1', 0))
  t.ok(limit.take('10.0.0.1', 0))
  t.equal(limit.take('10.0.0.1', 0), undefined, 'then the budget is spent as usual')
  const bucket = { tokens: 2, at: 0 }
  limit.refund(bucket)
  t.equal(bucket.tokens, 2, 'a refund never raises a bucket past the burst')
})

t.test('IPv4-mapped IPv6 is the IPv4 address; IPv6 counts per /64', async (t) => {
  const limit = new UnknownKeyLimit({ perSecond: 1, burst: 1, maxPeers: 100 })
  t.ok(limit.take('::ffff:192.0.2.7', 0))
  t.equal(limit.take('192.0.2.7', 0), undefined, 'the same peer, either spelling')
  t.ok(limit.take('2001:db8:1:2::1', 0))
  t.equal(limit.take('2001:db8:1:2:ffff:ffff:ffff:ffff', 0), undefined, 'another address of the same /64')
  t.ok(limit.take('2001:db8:1:3::1', 0), 'the next /64 is another peer')
})

t.test('the peer table is bounded: the least recently used peer goes', async (t) => {
  const limit = new UnknownKeyLimit({ perSecond: 0.001, burst: 1, maxPeers: 3 })
  t.ok(limit.take('10.0.0.1', 0))
  t.ok(limit.take('10.0.0.2', 0))
  t.ok(limit.take('10.0.0.3', 0))
  t.equal(limit.take('10.0.0.1', 0), undefined, '10.0.0.1 is spent, and now the most recently used')
  t.ok(limit.take('10.0.0.4', 0), 'a fourth peer: 10.0.0.2 is dropped')
  t.equal(limit.size, 3)
  t.equal(limit.take('10.0.0.1', 0), undefined, '10.0.0.1 was kept, still spent')
  t.ok(limit.take('10.0.0.2', 0), '10.0.0.2 was dropped: it starts again with its burst')
  t.equal(limit.size, 3)
})
