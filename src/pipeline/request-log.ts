/**
 * The last stage: one JSON line per request, with the decision's precise reason, and
 * the request's metrics (rule, status, reason, duration; src/metrics/metrics.ts).
 * The path is the one decided on, without its query string; no header is logged.
 *
 * The line has pino's shape (`level`, `time`, `pid`, ..., `msg`) and goes to the
 * logger's own asynchronous destination. Two measured costs shape this file:
 * pino's generic serialisation took 5.7 us a line here, JSON.stringify of the same
 * fixed-shape object 1.0 us; and sonic-boom measures the byte length of its whole
 * pending buffer on every write, so lines are handed to it in batches of ~8 KiB, and
 * at least every 100 ms (a timer, not setImmediate, which would make every event-loop
 * turn poll without waiting).
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { pino, type DestinationStream, type Logger } from 'pino'
import type { RequestMeter } from '../metrics/metrics.js'

export interface RequestLog {
  hook: (request: FastifyRequest, reply: FastifyReply, done: () => void) => void
  /** hand the pending lines to the destination now, and stop the timer (at close) */
  flush: () => void
}

export function createRequestLog (logger: Logger, meter: RequestMeter): RequestLog {
  const stream = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym] as DestinationStream
  const pid = process.pid
  let pending = ''
  const timer = setInterval(flush, 100)
  timer.unref()

  function flush (): void {
    if (pending === '') return
    const batch = pending
    pending = ''
    stream.write(batch)
  }

  function hook (request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    const s = request.kg
    const status = reply.statusCode
    const reason = s?.reason ?? (status >= 500 ? 'internal_error' : 'bad_request')
    // (the response has finished: fastify's end time is set, so this reads no clock)
    const ms = reply.elapsedTime
    meter.response(s?.rule, status, reason, ms)
    if (logger.isLevelEnabled('info')) {
      pending += JSON.stringify({
        level: 30,
        time: Date.now(),
        pid,
        req_id: request.id,
        method: request.method,
        path: s?.path,
        status,
        key_id: s?.keyId,
        reason,
        rule: s?.rule,
        latency_ms: Math.round(ms * 1000) / 1000,
        msg: 'request'
      }) + '\n'
      if (pending.length >= 8192) flush()
    }
    done()
  }

  return { hook, flush: () => { clearInterval(timer); flush() } }
}
