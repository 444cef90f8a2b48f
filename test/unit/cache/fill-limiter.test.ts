import t from 'tap'
import { FillLimiter, FillRefused } from '../../../src/cache/fill-limiter.js'

/** A limiter on a clock the test moves. */
function limiter (perSecond: number, maxWaitMs: number): { l: FillLimiter, advance: (ms: number) => void } {
  let now = 1000
  const l = new FillLimiter({ perSecond, maxWaitMs, now: () => now })
  return { l, advance: (ms) => { now += ms } }
}

t.test('a tenth of a second of fills goes at once, then misses queue', async (t) => {
  const { l, advance } = limiter(100, 1000)
  for (let i = 0; i < 10; i++) t.equal(l.take(), undefined, `fill ${i} at once`)
  const queued = l.take()
  t.type(queued, Promise, 'the 11th waits for its token')
  t.equal(l.waiting, 1)
  const next = l.take()
  t.equal(l.waiting, 2)
  advance(20)
  await Promise.all([queued, next])
  t.equal(l.waiting, 0, 'both got theirs once the bucket refilled')
})

t.test('a miss that would wait longer than fill_wait_ms is refused at once, and the queue stays bounded', async (t) => {
  const { l, advance } = limiter(100, 100) // 10 ms a token: 10 waiters fit in 100 ms
  for (let i = 0; i < 10; i++) l.take()
  const waiting: Array<Promise<void>> = []
  for (let i = 0; i < 10; i++) waiting.push(l.take() as Promise<void>)
  t.equal(l.waiting, 10)
  await t.rejects(l.take() as Promise<void>, FillRefused, 'the 11th waiter is refused')
  t.equal(l.waiting, 10, 'and not queued')
  t.equal(l.refused, 1)
  advance(100)
  await Promise.all(waiting)
})

t.test('waiters get their tokens first come, first served, as the bucket refills', async (t) => {
  const { l, advance } = limiter(1000, 1000)
  for (let i = 0; i < 100; i++) l.take()
  const order: number[] = []
  const waiting = [0, 1, 2].map(async (i) => { await l.take(); order.push(i) })
  advance(2) // two tokens
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.same(order, [0, 1], 'the first two got the two tokens')
  advance(1)
  await Promise.all(waiting)
  t.same(order, [0, 1, 2])
  t.equal(l.waiting, 0)
})

t.test('the background refill takes only what no miss waits for, and leaves half the bucket', async (t) => {
  const { l, advance } = limiter(1000, 1000) // bucket of 100
  t.equal(l.takeIdle(1000), 50, 'half the bucket')
  t.equal(l.takeIdle(1000), 0, 'the rest is the misses\'')
  t.equal(l.take(), undefined, 'a miss still finds a token at once')
  for (let i = 0; i < 49; i++) l.take()
  const w = l.take() as Promise<void>
  advance(1000)
  t.equal(l.takeIdle(1000), 0, 'nothing while a miss waits')
  await w
  t.equal(l.takeIdle(10), 10, 'at most what it asks for')
})
