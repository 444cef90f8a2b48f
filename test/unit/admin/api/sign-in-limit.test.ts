// The per-peer limit of failed admin sign-ins: its window, Retry-After, attempts in flight, its bound on memory, and what a peer is.
import t from 'tap'
import { createSignInLimit, type SignInAttempt, type SignInLimit } from '../../../../src/admin/api/sign-in-limit.js'

/** one attempt from `peer` that fails; the Retry-After seconds instead when it is refused */
function fail (limit: SignInLimit, peer: string): number {
  const a = limit.attempt(peer)
  if (typeof a === 'number') return a
  a.failed()
  return 0
}

t.test('perMinute failures, then Retry-After until the window (opened at the first failure) closes', async (t) => {
  let now = 1_000_000
  const limit = createSignInLimit({ perMinute: 3, now: () => now })
  for (let i = 0; i < 3; i++) {
    t.equal(fail(limit, 'a'), 0, `failure ${i + 1} is evaluated`)
    now += 1000
  }
  t.equal(limit.attempt('a'), 57, 'opened 3 s ago: 57 s left')
  t.not(typeof limit.attempt('b'), 'number', 'another peer is not affected')
  now += 56_500
  t.equal(limit.attempt('a'), 1, 'at least 1 s, rounded up')
  now += 500
  t.equal(fail(limit, 'a'), 0, 'the window is over: a new one counts from one')
  t.equal(fail(limit, 'a'), 0)
  t.equal(fail(limit, 'a'), 0)
  t.ok(fail(limit, 'a') > 0, 'three failures in the new window')
})

t.test('attempts in flight count: no more than perMinute are evaluated at once', async (t) => {
  const now = 1_000_000
  const limit = createSignInLimit({ perMinute: 3, now: () => now })
  const started = Array.from({ length: 10 }, () => limit.attempt('a'))
  const admitted = started.filter((a): a is SignInAttempt => typeof a !== 'number')
  t.equal(admitted.length, 3, 'three admitted before any lookup ended')
  t.same(started.slice(3), Array(7).fill(1), 'the rest: Retry-After 1 (attempts in flight, no failure yet)')
  admitted[0]?.passed()
  const fourth = limit.attempt('a')
  t.not(typeof fourth, 'number', 'an attempt that passed makes room')
  admitted[1]?.failed()
  admitted[1]?.failed()
  admitted[2]?.failed()
  t.equal(limit.attempt('a'), 1, 'two failures and one in flight: refused for a second')
  if (typeof fourth !== 'number') fourth.failed()
  t.equal(limit.attempt('a'), 60, 'three failures (each counted once): refused for the window')
})

t.test('a peer whose attempts all passed is not kept', async (t) => {
  const limit = createSignInLimit({ perMinute: 3 })
  const a = limit.attempt('a')
  t.equal(limit.size(), 1, 'in flight: tracked')
  if (typeof a !== 'number') a.passed()
  t.equal(limit.size(), 0, 'passed: dropped')
})

t.test('memory is bounded: closed windows go first, then unblocked ones; a blocked peer is never forgotten', async (t) => {
  let now = 0
  const limit = createSignInLimit({ perMinute: 1, maxPeers: 3, now: () => now })
  fail(limit, 'old')
  now = 61_000
  fail(limit, 'p1')
  fail(limit, 'p2')
  fail(limit, 'p3')
  t.equal(limit.size(), 3)
  t.ok(typeof limit.attempt('p1') === 'number' && typeof limit.attempt('p2') === 'number' && typeof limit.attempt('p3') === 'number', 'the closed window made room')
  t.equal(limit.attempt('p4'), 60, 'every window blocked: a new peer waits for the oldest to close')
  t.equal(limit.size(), 3, 'never more than maxPeers')
  for (let i = 0; i < 10_000; i++) fail(limit, `flood${i}`)
  t.equal(limit.size(), 3)
  t.equal(limit.attempt('p1'), 60, 'the blocked peers are still blocked after a flood of new ones')
  t.equal(typeof limit.attempt('p3'), 'number')
  now += 60_000
  t.equal(fail(limit, 'p4'), 0, 'the windows closed: room again')
})

t.test('under load, an unblocked window makes room before any blocked one', async (t) => {
  let now = 0
  const limit = createSignInLimit({ perMinute: 2, maxPeers: 2, now: () => now })
  fail(limit, 'blocked')
  fail(limit, 'blocked')
  fail(limit, 'once')
  now = 1000
  t.equal(fail(limit, 'new'), 0, 'a new peer is counted: the unblocked window made room')
  t.equal(limit.attempt('blocked'), 59, 'the blocked one stays blocked')
})
