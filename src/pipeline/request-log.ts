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
 * - writing: every asynchronous write is a round trip through libuv's threadpool, which
 *   cost ~100 us of CPU a write on the benchmark machine, more than the write itself.
 *   Lines are handed to the destination in batches of 64 KiB (~300 lines), and at least
 *   every 100 ms (a timer, not setImmediate, which would make every event-loop turn poll
 *   without waiting). With 8 KiB batches the log cost 8% of throughput; with 64 KiB
 *   about 1% (docs/benchmarks.md, session 5).
 * - encoding: every line is ASCII (the path, the only field a client shapes, is escaped
 *   to it), so the process's own sink (logger.ts) copies a batch byte for byte instead of
 *   encoding it as UTF-8.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { pino, type DestinationStream, type Logger } from 'pino'
import type { LogSink } from '../logger.js'
import type { RequestMeter } from '../metrics/metrics.js'
import type { RequestState } from './request-state.js'

export interface RequestLog {
  hook: (request: FastifyRequest, reply: FastifyReply, done: () => void) => void
  /** hand the pending lines to the destination now, and stop the timer (at close) */
  flush: () => void
}

/** pending bytes (= characters: the lines are ASCII) that make a batch */
const BATCH = 64 * 1024

export function createRequestLog (logger: Logger, meter: RequestMeter): RequestLog {
  const stream = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym] as DestinationStream & Partial<LogSink>
  // (a destination of the caller's, in tests, takes the batch as a string)
  const write = stream.writeAscii === undefined ? (batch: string) => { stream.write(batch) } : (batch: string) => { (stream as LogSink).writeAscii(batch) }
  const pid = process.pid
  let pending = ''
  const timer = setInterval(flush, 100)
  timer.unref()

  function flush (): void {
    if (pending === '') return
    const batch = pending
    pending = ''
    write(batch)
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
      if (pending.length >= BATCH) flush()
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
    return asciiJson({ level: 30, time: Date.now(), pid, req_id: request.id, method: request.method, status, reason, latency_ms: Math.round(ms * 1000) / 1000, msg: 'request' }) + '\n'
  }

  return { hook, flush: () => { clearInterval(timer); flush() } }
}

// printable ASCII without `"` and `\`: a JSON string as it is
const JSON_SAFE = /^[\x20\x21\x23-\x5B\x5D-\x7E]*$/

function jsonString (text: string): string {
  return JSON_SAFE.test(text) ? '"' + text + '"' : asciiJson(text)
}

// JSON.stringify leaves characters above U+007E as they are (it escapes only controls,
// `"`, `\` and lone surrogates); JSON also allows them as \uXXXX escapes
const NON_ASCII = /[\u007f-\uffff]/g

/** JSON text that is pure ASCII: the same value for every JSON parser */
export function asciiJson (value: unknown): string {
  return JSON.stringify(value).replace(NON_ASCII, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'))
}
