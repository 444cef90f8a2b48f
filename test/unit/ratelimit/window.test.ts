/**
 * The window arithmetic (src/ratelimit/window.ts), the specification the Lua script
 * follows: the guarantee (never more than `count` in any interval of one period),
 * what it refuses, and the reset times it reports.
 */
import t from 'tap'
import { parseRateLimit, type RateLimit } from '../../../src/config/rate-limit.js'
import { countsOf, resetAfter, SLOTS, slotMs, take, type Counts } from '../../../src/ratelimit/window.js'

const limit = (text: string): RateLimit => parseRateLimit(text) as RateLimit

/** Every interval (a, a + P] holds at most `count` of the sorted times. */
function maxInAnyWindow (times: number[], periodMs: number): number {
  let most = 0
  let start = 0
  for (let end = 0; end < times.length; end++) {
    while ((times[start] as number) <= (times[end] as number) - periodMs) start++
    most = Math.max(most, end - start + 1)
  }
  return most
}

/** A small deterministic generator (mulberry32). */
function random (seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6D2B79F5) | 0
    let x = Math.imul(a ^ (a >>> 15), 1 | a)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

t.test('slots: a tenth of the period, in whole ms', async (t) => {
  t.equal(SLOTS, 10)
  t.equal(slotMs(limit('5/1s')), 100)
  t.equal(slotMs(limit('5/1h')), 360_000)
  t.equal(slotMs(limit('5/7s')), 700)
})

t.test('never more than count in any interval of one period', async (t) => {
  for (const [text, seed, n] of [['5/1s', 1, 5000], ['50/10s', 2, 20000], ['3/2s', 3, 5000], ['1/1s', 4, 3000], ['100/1m', 5, 50000]] as Array<[string, number, number]>) {
    const l = limit(text)
    const rnd = random(seed)
    const counts: Counts = new Map()
    const allowed: number[] = []
    let now = 1_700_000_000_000
    for (let i = 0; i < n; i++) {
      // bursts and gaps: many requests in the same ms, traffic around the limit's
      // rate, now and then a pause of up to a period
      const r = rnd()
      now += r < 0.5 ? 0 : r < 0.97 ? Math.floor(rnd() * 2 * l.periodMs / l.count) : Math.floor(rnd() * l.periodMs)
      if (take(counts, l, now).allowed) allowed.push(now)
    }
    const most = maxInAnyWindow(allowed, l.periodMs)
    t.ok(most <= l.count, `${text}: at most ${l.count} in any window (${most}; ${allowed.length} allowed of ${n})`)
    t.equal(most, l.count, `${text}: and the limit is reached`)
    t.ok(counts.size <= SLOTS + 1, `${text}: at most ${SLOTS + 1} counters held (${counts.size})`)
  }
})

t.test('a burst: the next request waits until the burst leaves the window, one period', async (t) => {
  const l = limit('50/10s')
  const counts: Counts = new Map()
  const t0 = 1_700_000_000_000 // a whole second: a slot starts here
  for (let i = 0; i < 50; i++) t.equal(take(counts, l, t0).allowed, true)
  const refused = take(counts, l, t0 + 5)
  t.equal(refused.allowed, false, 'the 51st is refused')
  t.equal(refused.used, 50)
  t.equal(refused.resetMs, 10_000 - 5, 'until the burst leaves the window')
  t.equal(take(counts, l, t0 + 9_999).allowed, false, 'one ms before: still refused')
  t.equal(take(counts, l, t0 + 10_000).allowed, true, 'at the reset: allowed')
  t.equal(take(counts, l, t0 + 10_000, false).used, 1, 'the burst no longer counts')
})

t.test('a reset is never more than the period (6/20s answered 21 s)', async (t) => {
  const l = limit('6/20s')
  const counts: Counts = new Map()
  // six requests late in one 2 s slot, then a seventh: the slot's end is past now + 20 s
  const t0 = 1_700_000_001_900
  for (let i = 0; i < 6; i++) t.equal(take(counts, l, t0 + i * 10).allowed, true)
  const refused = take(counts, l, t0 + 60)
  t.equal(refused.allowed, false)
  t.ok(refused.resetMs <= l.periodMs, `reset ${refused.resetMs} ms <= 20000`)
  t.equal(refused.resetMs, 20_000 - 10, 'when the sixth request leaves the window')
  t.equal(take(counts, l, t0 + 60 + refused.resetMs).allowed, true, 'and at that moment one is allowed')

  // and in random traffic, every answer, allowed or refused
  for (const [text, seed] of [['6/20s', 11], ['5/1s', 12], ['100/1m', 13]] as Array<[string, number]>) {
    const lim = limit(text)
    const rnd = random(seed)
    const c: Counts = new Map()
    let now = 1_700_000_000_000
    let worst = 0
    for (let i = 0; i < 5000; i++) {
      now += rnd() < 0.5 ? 0 : Math.floor(rnd() * 2 * lim.periodMs / lim.count)
      worst = Math.max(worst, take(c, lim, now).resetMs)
    }
    t.ok(worst <= lim.periodMs, `${text}: the longest reset ${worst} ms is within the period`)
  }
})

t.test('refused requests are not counted', async (t) => {
  const l = limit('2/1s')
  const counts: Counts = new Map()
  take(counts, l, 1000)
  take(counts, l, 1000)
  for (let i = 0; i < 100; i++) t.equal(take(counts, l, 1100).allowed, false)
  t.equal([...counts.values()].reduce((a, b) => a + b.n, 0), 2, 'only the two allowed')
})

t.test('an allowed request resets when the oldest counted request leaves the window', async (t) => {
  const l = limit('10/1s')
  const counts: Counts = new Map()
  t.equal(take(counts, l, 5_050).resetMs, 1000, 'the request at 5.05 s leaves the window at 6.05 s')
  t.equal(take(counts, l, 5_420).resetMs, 630, 'still the oldest')
  t.same(take(counts, l, 5_420, false), { allowed: true, used: 2, resetMs: 630 }, 'a look does not count')
})

t.test('resetAfter: a lowered limit needs several slots to leave', async (t) => {
  const l = limit('3/1s')
  const counts: Counts = new Map([[10, { n: 4, last: 1050 }], [12, { n: 2, last: 1290 }], [15, { n: 1, last: 1550 }]])
  // at 1.55 s (slot 15): 7 counted, 3 allowed; the next needs 5 to leave: slots 10 (4) and 12 (2)
  t.equal(resetAfter(counts, l, 1550, 7), 1290 + 1000 - 1550)
})

t.test('countsOf: the stored hash; a slot without its time counts until its end', async (t) => {
  const l = limit('3/1s')
  t.same([...countsOf({ 10: '4', t10: '1050', 12: '2', junk: 'x' }, l)], [[10, { n: 4, last: 1050 }], [12, { n: 2, last: 1299 }]])
})
