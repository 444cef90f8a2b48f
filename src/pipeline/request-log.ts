/**
 * The last stage: one JSON line per request, with the decision's precise reason, and
 * the request's metrics (rule, status, reason, duration; src/metrics/metrics.ts).
 * The path is the one decided on, without its query string; no header is logged.
 *
 * The line has pino's shape (`level`, `time`, `pid`, ..., `msg`) and goes to the
 * logger's own asynchronous destination. Two measured costs shape this file:
 * - serialising: pino's generic serialiser took 5.7 us a line, JSON.stringify of the
 *   same fixed-shape object 1.0 us; the line is now written out, and only the path,
 *   the one field a client shapes, is checked for characters JSON must escape;
 * - writing: sonic-boom measures the byte length of its whole pending buffer on every
 *   write, so lines are handed to it in batches of ~8 KiB, and at least every 100 ms
 *   (a timer, not setImmediate, which would make every event-loop turn poll without
 *   waiting).
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { pino, type DestinationStream, type Logger } from 'pino'
import type { RequestMeter } from '../metrics/metrics.js'
import type { RequestState } from './request-state.js'

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
      pending += s === undefined ? genericLine(request, status, reason, ms) : line(request, s, status, reason, ms)
      if (pending.length >= 8192) flush()
    }
    done()
  }

  /**
   * The line, written out: every field but the path is a number or a string the gateway
   * made or node's HTTP parser admitted (uuid, a known method token, base62 key id,
   * reason); a path that passed the target policy holds only RFC 3986 pchars, any
   * other goes through JSON.stringify.
   */
  function line (request: FastifyRequest, s: RequestState, status: number, reason: string, ms: number): string {
    return `{"level":30,"time":${Date.now()},"pid":${pid},"req_id":"${request.id}","method":"${request.method}","path":${jsonString(s.path)},"status":${status}` +
      (s.keyId === undefined ? '' : `,"key_id":"${s.keyId}"`) +
      `,"reason":"${reason}"` +
      (s.rule === undefined ? '' : `,"rule":${s.rule}`) +
      `,"latency_ms":${Math.round(ms * 1000) / 1000},"msg":"request"}\n`
  }

  /** A request the gateway's first hook never saw (no state): the same shape, generically. */
  function genericLine (request: FastifyRequest, status: number, reason: string, ms: number): string {
    return JSON.stringify({ level: 30, time: Date.now(), pid, req_id: request.id, method: request.method, status, reason, latency_ms: Math.round(ms * 1000) / 1000, msg: 'request' }) + '\n'
  }

  return { hook, flush: () => { clearInterval(timer); flush() } }
}

// printable ASCII without `"` and `\`: a JSON string as it is
const JSON_SAFE = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/

function jsonString (text: string): string {
  return JSON_SAFE.test(text) ? '"' + text + '"' : JSON.stringify(text)
}
