// The per-peer limit of failed admin sign-ins: its window, Retry-After, its bound on memory, and what a peer is.
import t from 'tap'
import { createSignInLimit } from '../../../../src/admin/api/sign-in-limit.js'

t.test('perMinute failures, then Retry-After until the window (opened at the first failure) closes', async (t) => {
  let now = 1_000_000
  const limit = createSignInLimit({ perMinute: 3, now: () => now })
  for (let i = 0; i < 3; i++) {
    t.equal(limit.retryAfter('a'), 0, `before failure ${i + 1}`)
    limit.failed('a')
    now += 1000
  }
  t.equal(limit.retryAfter('a'), 57, 'opened 3 s ago: 57 s left')
  t.equal(limit.retryAfter('b'), 0, 'another peer is not affected')
  now += 56_500
  t.equal(limit.retryAfter('a'), 1, 'at least 1 s, rounded up')
  now += 500
  t.equal(limit.retryAfter('a'), 0, 'the window is over')
  limit.failed('a')
  t.equal(limit.retryAfter('a'), 0, 'a new window counts from one')
})

t.test('memory is bounded: closed windows go first, then the oldest', async (t) => {
  let now = 0
  const limit = createSignInLimit({ perMinute: 1, maxPeers: 3, now: () => now })
  limit.failed('old')
  now = 61_000
  limit.failed('p1')
  limit.failed('p2')
  limit.failed('p3')
  t.equal(limit.size(), 3)
  t.ok(limit.retryAfter('p1') > 0 && limit.retryAfter('p2') > 0 && limit.retryAfter('p3') > 0, 'the closed window made room')
  limit.failed('p4')
  t.equal(limit.size(), 3, 'never more than maxPeers')
  t.equal(limit.retryAfter('p1'), 0, 'the oldest open window was dropped')
  t.ok(limit.retryAfter('p4') > 0)
  for (let i = 0; i < 10_000; i++) limit.failed(`flood${i}`)
  t.equal(limit.size(), 3)
})
