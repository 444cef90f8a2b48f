// The background parts: started in the order they were added, stopped in the reverse
// order, each stop awaited (drained) before the next part stops, once.
import t from 'tap'
import { Lifecycle, type Background } from '../../src/lifecycle.js'

function part (name: string, log: string[], o: { fail?: boolean, slow?: boolean } = {}): Background {
  return {
    name,
    start: () => { log.push(`start ${name}`) },
    stop: async () => {
      log.push(`stop ${name}`)
      if (o.slow === true) await new Promise((resolve) => setImmediate(resolve))
      if (o.fail === true) throw new Error(`${name} failed`)
      log.push(`stopped ${name}`)
    }
  }
}

t.test('started in order, stopped in reverse, each drained before the next stops', async (t) => {
  const log: string[] = []
  const l = new Lifecycle().add(part('redis', log)).add(part('counter', log, { slow: true })).add(part('listeners', log))
  t.same(log, [], 'nothing starts before start()')
  l.start()
  l.start()
  t.same(log, ['start redis', 'start counter', 'start listeners'], 'each once, in order')
  log.length = 0
  t.same(l.stopOrder, ['listeners', 'counter', 'redis'])
  await Promise.all([l.stop(), l.stop()])
  t.same(log, ['stop listeners', 'stopped listeners', 'stop counter', 'stopped counter', 'stop redis', 'stopped redis'],
    'the slow drain of the counter ends before redis stops; each stops once')
})

t.test('a stop that fails is reported, and the others stop regardless', async (t) => {
  const log: string[] = []
  const failed: string[] = []
  const l = new Lifecycle((name) => { failed.push(name) }).add(part('redis', log)).add(part('refill', log, { fail: true }))
  l.start()
  await l.stop()
  t.same(failed, ['refill'])
  t.ok(log.includes('stopped redis'))
  t.throws(() => l.add(part('late', log)), /added after the stop/)
})

t.test('a part added once started is started at once', async (t) => {
  const log: string[] = []
  const l = new Lifecycle()
  l.start()
  l.add(part('late', log))
  t.same(log, ['start late'])
})
