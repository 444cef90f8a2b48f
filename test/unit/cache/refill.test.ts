import t from 'tap'
import pino from 'pino'
import { FillLimiter } from '../../../src/cache/fill-limiter.js'
import { Refill } from '../../../src/cache/refill.js'
import { until } from '../../helpers/wait.js'

const logger = pino({ level: 'silent' })
const ids = (n: number, from = 0): string[] => Array.from({ length: n }, (_, i) => `id${from + i}`)

t.test('reads every id once, in order, skipping those that need no read', async (t) => {
  const read: string[] = []
  const refill = new Refill({
    limiter: new FillLimiter({ perSecond: 100_000, maxWaitMs: 1000 }),
    read: (id) => id.endsWith('7') ? undefined : (read.push(id), Promise.resolve()),
    session: () => 1,
    logger
  })
  refill.add([...ids(1000), 'id5'], 'test')
  await until(() => refill.size === 0 && refill.done === 900, 5000, 'the refill', 5)
  t.same(read, ids(1000).filter((id) => !id.endsWith('7')), 'each once, in order; the skipped ones take no read')
})

t.test('the ids of a failed batch are read again', async (t) => {
  let failing = true
  const read: string[] = []
  const refill = new Refill({
    limiter: new FillLimiter({ perSecond: 100_000, maxWaitMs: 1000 }),
    read: (id) => failing ? Promise.reject(new Error('down')) : (read.push(id), Promise.resolve()),
    session: () => 1,
    logger
  })
  t.teardown(() => { refill.stop() })
  refill.add(ids(10), 'test')
  await until(() => refill.done === 10, 5000, 'the failed batch', 5)
  t.equal(refill.size, 10, 'every id is kept')
  failing = false
  await until(() => refill.size === 0, 5000, 'the retry', 5)
  t.same(read.sort(), ids(10).sort(), 'and read once Redis answers')
})

t.test('nothing is read while push invalidation is down', async (t) => {
  let up = false
  let reads = 0
  const refill = new Refill({
    limiter: new FillLimiter({ perSecond: 100_000, maxWaitMs: 1000 }),
    read: () => { reads++; return Promise.resolve() },
    session: () => up ? 1 : 0,
    logger
  })
  refill.add(ids(10), 'test')
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(reads, 0, 'no read')
  t.equal(refill.size, 10, 'the ids are kept')
  up = true
  refill.add([], 'established')
  await until(() => refill.size === 0, 5000, 'the refill', 5)
  t.equal(reads, 10)
})

t.test('the refill takes no more than the budget leaves it', async (t) => {
  let now = 0
  const limiter = new FillLimiter({ perSecond: 1000, maxWaitMs: 1000, now: () => now })
  let reads = 0
  const refill = new Refill({ limiter, read: () => { reads++; return Promise.resolve() }, session: () => 1, logger })
  t.teardown(() => { refill.stop() })
  refill.add(ids(500), 'test')
  await new Promise((resolve) => setTimeout(resolve, 30))
  t.equal(reads, 50, 'half the bucket, while the clock stands still')
  now += 100 // the bucket is full again (100), the refill leaves half of it
  await until(() => reads === 100, 5000, 'the budget of a tenth of a second more', 5)
  await new Promise((resolve) => setTimeout(resolve, 30))
  t.equal(reads, 100, 'and no more')
})

t.test('a batch in flight when push invalidation is lost is read again at the next establishment', async (t) => {
  // `session` is when tracking was last established (0 while down): a read whose session
  // ended while it was in flight may not have been installed (the flush refused its ticket)
  let session = 1
  const read: string[] = []
  const held: Array<() => void> = []
  const refill = new Refill({
    limiter: new FillLimiter({ perSecond: 100_000, maxWaitMs: 1000 }),
    read: (id) => { read.push(id); return new Promise<void>((resolve) => { held.push(resolve) }) },
    session: () => session,
    logger
  })
  t.teardown(() => { refill.stop() })
  refill.add(ids(10), 'test')
  await until(() => held.length === 10, 5000, 'the batch in flight', 5)
  session = 0 // lost while the reads are in flight
  for (const resolve of held.splice(0)) resolve()
  await until(() => refill.done === 10, 5000, 'the batch settles', 5)
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(refill.size, 10, 'its ids are kept for the next establishment')
  session = 2
  refill.add([], 'established')
  await until(() => held.length === 10, 5000, 'read again', 5)
  for (const resolve of held.splice(0)) resolve()
  await until(() => refill.size === 0 && refill.done === 20, 5000, 'the refill', 5)
  t.same(read.slice(10).sort(), ids(10).sort(), 'each id read again once')
})
