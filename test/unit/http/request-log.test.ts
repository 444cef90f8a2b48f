// The log line's latency_ms (src/http/request-log.ts): the duration rounded to the
// microsecond, written exactly as JavaScript prints `Math.round(ms * 1000) / 1000`.
import t from 'tap'
import { milliseconds } from '../../../src/http/request-log.js'

t.test('as JavaScript prints the rounded number', async (t) => {
  const printed = (ms: number): string => String(Math.round(ms * 1000) / 1000)
  let wrong = 0
  for (let us = 0; us < 2_000_000; us++) if (milliseconds(us / 1000) !== printed(us / 1000)) wrong++
  for (let i = 0; i < 100_000; i++) {
    const ms = Math.random() * 100_000
    if (milliseconds(ms) !== printed(ms)) wrong++
  }
  t.equal(wrong, 0, 'every duration up to 2 s, and random ones up to 100 s')
  for (const ms of [0, 0.0004, 0.0005, 1.5, 2.25, 0.125, 3_000_000, 1e12, Number.NaN, -1]) t.equal(milliseconds(ms), printed(ms), String(ms))
})
