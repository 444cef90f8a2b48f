// The stale-window line of a Redis outage (src/registry/outage-log.ts) comes when the cache
// stops serving cached decisions, not before: the window runs from the cache's last agreement
// with Redis, which push invalidation's ping may have answered after the connection's last reply.
import t from 'tap'
import { pino, type Logger } from 'pino'
import { logRedisOutages } from '../../../src/registry/outage-log.js'
import type { RedisHealth } from '../../../src/registry/redis-client.js'

interface Line { msg: string, time: number }

function outage (): { health: RedisHealth, down: () => void, lines: Line[], logger: Logger } {
  const listeners: Array<(up: boolean) => void> = []
  const state = { up: true, lastOkAt: Date.now() - 10_000 }
  const health = {
    get up () { return state.up },
    get lastOkAt () { return state.lastOkAt },
    onChange: (l: (up: boolean) => void) => { listeners.push(l) }
  } as unknown as RedisHealth
  const lines: Line[] = []
  const logger: Logger = pino({ level: 'info' }, { write: (s: string) => { lines.push(JSON.parse(s) as Line) } })
  return { health, lines, logger, down: () => { state.up = false; for (const l of listeners) l(false) } }
}

const staleLines = (lines: Line[]): Line[] => lines.filter((l) => /stale window has ended/.test(l.msg))
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

t.test('the connection\'s last answer long past: the line at once', async (t) => {
  const o = outage()
  const log = logRedisOutages(o.health, o.logger, { url: 'redis://127.0.0.1:6390', staleIfErrorMs: 200 })
  t.teardown(log.stop)
  o.down()
  await sleep(20)
  t.equal(staleLines(o.lines).length, 1, 'the window had ended before the outage was seen')
})

t.test('a later agreement (push invalidation\'s ping): the line only once the window from it has ended', async (t) => {
  const o = outage()
  let agreed = Date.now()
  const log = logRedisOutages(o.health, o.logger, {
    url: 'redis://127.0.0.1:6390', staleIfErrorMs: 300, agreedAt: () => agreed
  })
  t.teardown(log.stop)
  o.down()
  // an agreement answered just after the outage began moves the end
  agreed += 100
  await sleep(20)
  t.equal(staleLines(o.lines).length, 0, 'not while cached decisions are still served')
  const deadline = Date.now() + 5000
  while (staleLines(o.lines).length === 0 && Date.now() < deadline) await sleep(20)
  const [line] = staleLines(o.lines)
  t.ok(line !== undefined, 'the line, once the window has ended')
  t.ok((line?.time ?? 0) >= agreed + 300, 'not before the last agreement + the window')
})
