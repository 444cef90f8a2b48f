/**
 * The log stage, the last: one JSON line per request, with the decision's precise reason and
 * the request's W3C trace id (src/tracing/), and
 * the request's metrics (rule, status, reason, duration; src/metrics/metrics.ts), its
 * key's usage count (an in-memory increment; src/usage/counter.ts) and its key's request
 * log record (an array push; src/usage/key-requests.ts).
 * The path is the one decided on, without its query string; no header is logged.
 * Anything key-shaped in the path is logged as its key id at most (src/redact.ts;
 * tested cheaply first: a path without `_` or `%` is written as it is).
 *
 * `log.allowed_sample_ratio` below 1 writes that share of the lines of requests that passed
 * (reasons `allowed`, `public`, `cors_preflight`) and were answered below 500, chosen by the
 * gateway at random (never by anything a client sends, such as its trace id), each such line
 * carrying `sample_ratio`; every other line (a refusal, a 5xx, a shadow rule's disagreement) is
 * always written. Metrics, usage counts and the per-key request log see every request.
 *
 * The line has pino's shape (`level`, `time`, `pid`, ..., `msg`) and goes to the
 * logger's own asynchronous destination. Measured costs shape this file:
 * - serialising: pino's generic serialiser takes 5.7 us a line, JSON.stringify of the
 *   same fixed-shape object 1.0 us; the line is written out, and only the path, the
 *   one field a client shapes, is checked for characters JSON must escape. Every line
 *   is ASCII (anything else in the path is escaped), so it is copied as bytes, one
 *   byte a character, never encoded as UTF-8.
 * - holding: each line is copied at once into an off-heap batch buffer, so its strings
 *   die young (a batch held as a string survives several young-generation collections).
 * - writing: every asynchronous write is a round trip through libuv's threadpool, ~100 us
 *   of CPU on the benchmark machine, so batches are 64 KiB (~300 lines), written at
 *   least every 100 ms (a timer, not setImmediate, which would make every event-loop
 *   turn poll without waiting).
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Logger } from 'pino'
import { destinationOf, sinkOf } from '../logger.js'
import { createRedactor } from '../redact.js'
import type { RequestMeter } from '../metrics/metrics.js'
import type { Mode } from '../metrics/request-metrics.js'
import type { UsageCounter } from '../usage/counter.js'
import type { KeyRequests } from '../usage/key-requests.js'
import { newTraceId } from '../tracing/trace-context.js'
import type { RequestState } from './request-state.js'
import type { Identity } from '../decision/identity.js'
import { keyPrefixesOf } from '../registry/key-format.js'
import type { Config } from '../config/schema.js'

/** What the log reads of a request and its reply: fastify's, or a WebSocket upgrade's (src/websocket/). */
export type LoggedRequest = Pick<FastifyRequest, 'id' | 'method' | 'kg'>
export type LoggedReply = Pick<FastifyReply, 'statusCode' | 'elapsedTime'>

/** What a listener's log stage counts and writes besides the line (listener.ts). */
export interface RequestLogOptions {
  meter: RequestMeter
  /** `keys`: what a key looks like, live and test (keyPrefixesOf), to log any in a path as its key id at most */
  keys: Pick<Config['keys'], 'prefix' | 'test_prefix'>
  mode: Mode
  usage?: UsageCounter
  requests?: KeyRequests
  /** `log.allowed_sample_ratio`: the share of passed requests' lines written (default 1: every line) */
  allowedSampleRatio?: number
}

export interface RequestLog {
  hook: (request: LoggedRequest, reply: LoggedReply, done: () => void) => void
  /** hand the pending lines to the destination now, and stop the timer (at close) */
  flush: () => void
}

/** the bytes of a batch */
const BATCH = 64 * 1024

/** the reasons of a request that passed: their lines are the ones sampled */
const PASSED = new Set<string>(['allowed', 'public', 'cors_preflight'])

export function createRequestLog (logger: Logger, o: RequestLogOptions): RequestLog {
  const { meter, mode, usage, requests } = o
  const ratio = o.allowedSampleRatio ?? 1
  const redact = createRedactor(keyPrefixesOf(o.keys))
  const sink = sinkOf(logger)
  const stream = destinationOf(logger)
  // (a destination of the caller's, in tests, takes the lines as a string)
  const write = sink !== undefined
    ? (bytes: Buffer) => { sink.writeBytes(bytes) }
    : (bytes: Buffer) => { stream.write(bytes.toString('latin1')) }
  const pid = process.pid
  // the line's fixed parts, written once
  const pidReqId = `,"pid":${pid},"req_id":"`
  const modeField = `","mode":"${mode}"`
  const sampleField = ratio < 1 ? `,"sample_ratio":${ratio}` : ''
  // (the destination keeps a batch until it is written: each batch is a new buffer)
  let batch = Buffer.allocUnsafeSlow(BATCH)
  let used = 0
  const timer = setInterval(flush, 100)
  timer.unref()
  // the matched rule as the metrics name it (`GET /api/v1/users`), JSON-encoded once per rule
  const rules = new Map<number, string>()
  const ruleJson = (index: number): string => {
    let text = rules.get(index)
    if (text === undefined) rules.set(index, text = jsonString(meter.ruleLabel(index)))
    return text
  }

  function append (text: string): void {
    if (used + text.length > BATCH) flush()
    if (text.length > BATCH) write(Buffer.from(text, 'latin1'))
    else used += batch.write(text, used, 'latin1')
  }

  function flush (): void {
    if (used === 0) return
    const full = batch.subarray(0, used)
    batch = Buffer.allocUnsafeSlow(BATCH)
    used = 0
    write(full)
  }

  function hook (request: LoggedRequest, reply: LoggedReply, done: () => void): void {
    const s = request.kg
    const status = reply.statusCode
    const reason = s?.reason ?? (status >= 500 ? 'internal_error' : 'bad_request')
    // (the response has finished: fastify's end time is set, so this reads no clock)
    const ms = reply.elapsedTime
    meter.response(s?.rule, status, reason, ms)
    const now = Date.now()
    if (s?.keyId !== undefined) {
      usage?.count(s.keyId, s.identity?.org, status, s.reason, now)
      const method = s.method ?? request.method
      requests?.record(s.keyId, s.reason, method, s.path, status, ms, s.clientIp, s.trace.traceId, now)
    }
    if (logger.isLevelEnabled('info')) {
      if (s === undefined) append(genericLine(request, status, reason, ms, now))
      else if (ratio >= 1 || !sampled(s, status, reason)) append(line(request, s, status, reason, ms, now, ''))
      else if (Math.random() < ratio) append(line(request, s, status, reason, ms, now, sampleField))
    }
    done()
  }

  /** A line `log.allowed_sample_ratio` samples: the request passed, was answered below 500, no shadow disagreed. */
  function sampled (s: RequestState, status: number, reason: string): boolean {
    return status < 500 && s.shadow === undefined && PASSED.has(reason)
  }

  /**
   * The line, written out: every field but the path is a number or a string the gateway
   * made or node's HTTP parser admitted (uuid, lowercase hex trace id, a known method
   * token, base62 key id, reason) or an admin's name (org, user, role: escaped when they
   * need it); a path that passed the target policy holds only RFC 3986 pchars, any
   * other goes through JSON.stringify.
   */
  function line (
    request: LoggedRequest, s: RequestState, status: number, reason: string, ms: number, now: number, sample: string
  ): string {
    return '{"level":30,"time":' + now + pidReqId + request.id + '","trace_id":"' + s.trace.traceId + modeField +
      (s.via === undefined ? '' : `,"via":"${s.via}"`) +
      `,"method":"${s.method ?? request.method}","path":${jsonString(redact.path(s.path))},"status":${status}` +
      (s.clientIp === undefined ? '' : `,"client_ip":${jsonString(s.clientIp.slice(0, 64))}`) +
      (s.keyId === undefined ? '' : `,"key_id":"${s.keyId}"`) +
      (s.identity === undefined ? '' : identityFields(s.identity)) +
      (s.upstreamStatus === 0 ? '' : ',"upstream_status":' + s.upstreamStatus) +
      `,"reason":"${reason}"` +
      (s.rule === undefined ? '' : `,"rule":${ruleJson(s.rule)}`) +
      (s.shadow === undefined ? '' : `,"shadow":${JSON.stringify(s.shadow)}`) +
      ',"latency_ms":' + milliseconds(ms) + sample + ',"msg":"request"}\n'
  }

  /** A request the gateway's first hook never saw (no state, so no trace of its own): the same shape, generically. */
  function genericLine (request: LoggedRequest, status: number, reason: string, ms: number, now: number): string {
    return asciiJson({
      level: 30,
      time: now,
      pid,
      req_id: request.id,
      trace_id: newTraceId(),
      mode,
      method: request.method,
      status,
      reason,
      latency_ms: Math.round(ms * 1000) / 1000,
      msg: 'request'
    }) + '\n'
  }

  return { hook, flush: () => { clearInterval(timer); flush() } }
}

/**
 * The caller's org, user (a personal key's) and role, for per-tenant questions without a join.
 * Names an admin chose: JSON-escaped when they need it (one regular-expression test each otherwise).
 */
function identityFields (identity: Identity): string {
  return ',"org":' + jsonString(identity.org) +
    (identity.userId === undefined ? '' : ',"user":' + jsonString(identity.userId)) +
    ',"role":' + jsonString(identity.role)
}

// `.5`, `.25`, `.125` ...: the fraction of a millisecond in microseconds, as a JS number prints it
const FRACTIONS: readonly string[] = Array.from(
  { length: 1000 }, (_, us) => us === 0 ? '' : ('.' + String(us).padStart(3, '0')).replace(/0+$/, '')
)

/**
 * A duration in milliseconds, rounded to the microsecond, as `String(Math.round(ms * 1000) / 1000)`
 * prints it, without formatting a fraction (a table lookup).
 */
export function milliseconds (ms: number): string {
  const us = Math.round(ms * 1000)
  if (!(us >= 0 && us < 0x7fffffff)) return String(us / 1000)
  const whole = Math.floor(us / 1000)
  return String(whole) + (FRACTIONS[us - whole * 1000] as string)
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
