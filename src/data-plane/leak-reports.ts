/**
 * `POST /_keygate/v1/leaked` on the data plane: anyone who found keygate keys reports
 * them, without a credential (docs/leaks.md#reports-from-anyone). In the order a request
 * meets it:
 *
 *   1. the limit   one report per client address more than `leaks.public.per_address`
 *                  allows: answered at once, the body unread
 *   2. the body    read raw, at most MAX_BODY_BYTES: past that, or idle, or gone, it
 *                  is dropped unread
 *   3. the report  `{"keys":[...]}` with at most MAX_KEYS strings; anything else is
 *                  nothing to look up
 *   4. checksums   only strings in keygate's format whose checksum holds go on, once
 *                  each: a random string never costs a Redis call
 *   5. answer      202, empty, the same for every input; the keys left are handed to
 *                  `report` after the answer is sent (src/admin/leaks/public-reports.ts
 *                  looks them up and revokes each live key)
 *
 * The answer never depends on whether a key exists (no oracle): it is sent before any
 * lookup. The request's log line has reason `leak_report` (`leak_report_limited` past
 * the limit) and never the body.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Readable } from 'node:stream'
import type { AnonymousLimit } from '../ratelimit/anonymous.js'
import { parseKey, type KeyPrefixes } from '../registry/key-format.js'
import { declaredTooLarge, limitBody, type BodyLimits } from './body-limit.js'

export const LEAK_REPORT_PATH = '/_keygate/v1/leaked'
/** a report's body, at most (1,000 keys of keygate's format take about 60 KiB) */
export const MAX_BODY_BYTES = 128 * 1024
/** strings in one report, at most */
export const MAX_KEYS = 1000

/** Looks the keys up and revokes the live ones (checksums checked, each once); runs after the answer. */
export type LeakReporter = (keys: readonly string[]) => void

export interface LeakReportOptions {
  /** per client address (`leaks.public.per_address`) */
  limit: AnonymousLimit
  report: LeakReporter
  /** keys.prefix and keys.test_prefix */
  keyPrefix: KeyPrefixes
  /** limits.body_idle_timeout_ms */
  idleMs: number
}

/** the body, when it could not be read whole within the bounds */
const UNREAD = Buffer.alloc(0)

export async function leakReportRoute (scope: FastifyInstance, o: LeakReportOptions): Promise<void> {
  const bounds: BodyLimits = { bytes: MAX_BODY_BYTES, idleMs: o.idleMs }
  scope.removeAllContentTypeParsers()
  // every body, whatever its content type (or none): read raw within the bounds, never refused
  scope.addContentTypeParser('*', (request, payload, done) => {
    if (declaredTooLarge(request.headers, MAX_BODY_BYTES)) {
      done(null, UNREAD)
      return
    }
    const body = limitBody(payload as Readable, bounds)
    const chunks: Buffer[] = []
    let settled = false
    const settle = (value: Buffer): void => {
      if (settled) return
      settled = true
      done(null, value)
    }
    body.on('data', (chunk: Buffer) => { chunks.push(chunk) })
    body.once('end', () => { settle(Buffer.concat(chunks)) })
    body.once('error', () => { settle(UNREAD) })
  })
  // whatever goes wrong in this route is answered as everything else is
  scope.setErrorHandler((_err, request, reply) => accepted(request, reply))

  scope.post(LEAK_REPORT_PATH, {
    onRequest (request, reply, done) {
      if (o.limit(request.kg.clientIp, Date.now()).allowed) {
        request.kg.reason = 'leak_report'
        done()
        return
      }
      request.kg.reason = 'leak_report_limited'
      reply.header('connection', 'close')
      accepted(request, reply)
    }
  }, async (request, reply) => {
    const body = Buffer.isBuffer(request.body) ? request.body : UNREAD
    const keys = body === UNREAD ? [] : reportedKeys(body, o.keyPrefix)
    accepted(request, reply)
    if (keys.length > 0) setImmediate(o.report, keys)
    return reply
  })
}

function accepted (request: FastifyRequest, reply: FastifyReply): FastifyReply {
  // a body left unread (too large, or over the limit): the connection closes after the answer
  if (!request.raw.complete) reply.header('connection', 'close')
  return reply.code(202).header('x-request-id', request.id).header('cache-control', 'no-store').send()
}

/** The report's strings that are keygate keys by their checksum, each once; none when it is no report. */
export function reportedKeys (body: Buffer, keyPrefix: KeyPrefixes): string[] {
  let value: unknown
  try {
    value = JSON.parse(body.toString('utf8'))
  } catch {
    return []
  }
  if (typeof value !== 'object' || value === null) return []
  const keys = (value as { keys?: unknown }).keys
  if (!Array.isArray(keys) || keys.length > MAX_KEYS) return []
  const found = new Set<string>()
  for (const key of keys as unknown[]) {
    if (typeof key === 'string' && typeof parseKey(key, keyPrefix) !== 'string') found.add(key)
  }
  return [...found]
}
