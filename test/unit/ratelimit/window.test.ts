/**
 * The window arithmetic (src/ratelimit/window.ts), the specification the Lua script
 * follows: the guarantee (never more than `count` in any interval of one period),
 * what it refuses, and the reset times it reports.
 */
import t from 'tap'
import { parseRateLimit, type RateLimit } from '../../../src/ratelimit/limit.js'
import { resetAfter, SLOTS, slotMs, take, type Counts } from '../../../src/ratelimit/window.js'

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

t.test('a burst at a slot boundary: the next burst waits one period and a slot', async (t) => {
  const l = limit('50/10s')
  const counts: Counts = new Map()
  const t0 = 1_700_000_000_000 // a whole second: a slot starts here
  for (let i = 0; i < 50; i++) t.equal(take(counts, l, t0).allowed, true)
  const refused = take(counts, l, t0 + 5)
  t.equal(refused.allowed, false, 'the 51st is refused')
  t.equal(refused.used, 50)
  t.equal(refused.resetMs, 11_000 - 5, 'until the burst\'s slot leaves the read: (slot + 11) x 1 s')
  t.equal(take(counts, l, t0 + 10_999).allowed, false, 'one ms before: still refused')
  t.equal(take(counts, l, t0 + 11_000).allowed, true, 'at the reset: allowed')
  t.equal(take(counts, l, t0 + 11_000, false).used, 1, 'the old slot no longer counts')
})

t.test('refused requests are not counted', async (t) => {
  const l = limit('2/1s')
  const counts: Counts = new Map()
  take(counts, l, 1000)
  take(counts, l, 1000)
  for (let i = 0; i < 100; i++) t.equal(take(counts, l, 1100).allowed, false)
  t.equal([...counts.values()].reduce((a, b) => a + b, 0), 2, 'only the two allowed')
})

t.test('an allowed request resets when the oldest counted slot leaves', async (t) => {
  const l = limit('10/1s')
  const counts: Counts = new Map()
  t.equal(take(counts, l, 5_050).resetMs, 1050, 'slot 50 (5.0-5.1 s) leaves the read at 6.1 s')
  t.equal(take(counts, l, 5_420).resetMs, 680, 'still the oldest slot')
  t.same(take(counts, l, 5_420, false), { allowed: true, used: 2, resetMs: 680 }, 'a look does not count')
})

t.test('resetAfter: a lowered limit needs several slots to leave', async (t) => {
  const l = limit('3/1s')
  const counts: Counts = new Map([[10, 4], [12, 2], [15, 1]])
  // at 1.55 s (slot 15): 7 counted, 3 allowed; the next needs 5 to leave: slots 10 (4) and 12 (2)
  t.equal(resetAfter(counts, l, 1550, 7), (12 + 11) * 100 - 1550)
})
