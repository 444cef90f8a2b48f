/**
 * The receive stage, on every listener: the request's framing. What node's HTTP parser refuses
 * (an oversized or malformed head, a head that is too slow) is answered on the raw
 * socket with the catalogue's error object; what node would answer by itself (`Expect`)
 * goes through the listener's own hooks instead; and what node lets through but a
 * peer could read differently is refused here:
 *
 *   more header fields than limits.header_count   431, connection closed: whatever
 *       follows the fields a parser keeps (node: 1,000) could frame the body or
 *       carry a header the upstream relies on, unseen
 *   a second Host, or none in HTTP/1.1             400 (node would answer a request
 *       without one with a bare 400 of its own, outside the catalogue and the log)
 *   HTTP/1.0 with Transfer-Encoding                400, connection closed (RFC 9112 6.1)
 *   Expect other than 100-continue                 417, connection closed
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import type { Config } from '../config/schema.js'
import { ERRORS, errorBody, JSON_CONTENT_TYPE, type ErrorCode, type Reason } from '../errors.js'

/** the error, the reason logged, and whether the connection closes (the rest of the message is not read) */
export type FramingProblem = readonly [ErrorCode, Reason, boolean]

const TOO_MANY_HEADERS: FramingProblem = ['header_too_large', 'header_too_large', true]
const DUPLICATE_HOST: FramingProblem = ['bad_request', 'bad_request', false]
const MISSING_HOST: FramingProblem = ['bad_request', 'bad_request', true]
const HTTP10_CHUNKED: FramingProblem = ['bad_request', 'bad_request', true]
const UNKNOWN_EXPECTATION: FramingProblem = ['expectation_failed', 'expectation_failed', true]

/** The node http server options that enforce the head's limits (`Fastify({ http })`). */
export function headLimits (limits: Config['limits']): {
  maxHeaderSize: number, headersTimeout: number, connectionsCheckingInterval: number, requireHostHeader: boolean
} {
  return {
    // a missing Host is refused by problem() below, with the catalogue's error
    requireHostHeader: false,
    maxHeaderSize: limits.header_bytes,
    // a request head not complete in time gets 408 (onClientError); a body has its own idle timeout
    headersTimeout: limits.header_timeout_ms,
    connectionsCheckingInterval: Math.min(1000, Math.max(50, Math.floor(limits.header_timeout_ms / 4)))
  }
}

export interface Framing {
  tooManyHeaders: (req: IncomingMessage) => FramingProblem | undefined
  problem: (req: IncomingMessage) => FramingProblem | undefined
}

/**
 * Sets up a listener's server: node keeps one header field past header_count (so a
 * request over it is seen whole enough to refuse), and requests with `Expect` go
 * through the same hooks as any other (node would answer them itself: `100 Continue`
 * at once, a bare 417 for anything else). Returns the framing check for each request.
 */
export function checkFraming (server: Server, limits: Config['limits']): Framing {
  server.maxHeadersCount = limits.header_count + 1
  const maxRawHeaders = limits.header_count * 2
  const asRequest = (req: IncomingMessage, res: ServerResponse): void => { server.emit('request', req, res) }
  server.on('checkContinue', asRequest)
  server.on('checkExpectation', asRequest)
  return {
    tooManyHeaders: (req) => req.rawHeaders.length > maxRawHeaders ? TOO_MANY_HEADERS : undefined,
    problem (req) {
      if (req.rawHeaders.length > maxRawHeaders) return TOO_MANY_HEADERS
      const hosts = countHeader(req.rawHeaders, 'host')
      if (hosts > 1) return DUPLICATE_HOST
      if (hosts === 0 && req.httpVersionMajor === 1 && req.httpVersionMinor === 1) return MISSING_HOST
      if (req.httpVersionMinor === 0 && req.headers['transfer-encoding'] !== undefined) return HTTP10_CHUNKED
      const expect = req.headers.expect
      if (expect !== undefined && expect.toLowerCase() !== '100-continue') return UNKNOWN_EXPECTATION
      return undefined
    }
  }
}

/** Whether the client waits for `100 Continue` before it sends its body. */
export function expectsContinue (req: IncomingMessage): boolean {
  return req.headers.expect !== undefined
}

function countHeader (rawHeaders: readonly string[], lowerName: string): number {
  let n = 0
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length === lowerName.length && (name === lowerName || name.toLowerCase() === lowerName)) n++
  }
  return n
}

/** Errors node's HTTP parser raises before fastify sees a request: answered on the raw socket, logged, counted. */
export function onClientError (logger: Logger, refused?: (status: number, reason: Reason) => void) {
  return function onClientError (err: Error & { code?: string }, socket: Socket): void {
    if (err.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy()
      return
    }
    let code: ErrorCode = 'bad_request'
    let reason: Reason = 'bad_request'
    if (err.code === 'HPE_HEADER_OVERFLOW') { code = 'header_too_large'; reason = 'header_too_large' }
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') { code = 'request_timeout'; reason = 'request_timeout' }
    const { status } = ERRORS[code]
    const body = errorBody(code)
    const id = randomUUID()
    logger.info({ req_id: id, status, reason, detail: err.code }, 'request')
    refused?.(status, reason)
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
      `Content-Type: ${JSON_CONTENT_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n` +
      `X-Request-Id: ${id}\r\n` +
      'Connection: close\r\n\r\n' + body
    )
  }
}
