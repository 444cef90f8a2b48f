/**
 * Answers to an upgrade request that is not upgraded, written on its raw socket (node
 * hands an upgrade request over as a socket, not as a response object). Either the
 * gateway's own error, with the headers a refused GET would carry (the catalogue's
 * body, `X-Request-Id`, `WWW-Authenticate`, `RateLimit-*`, `Retry-After`), or the
 * upstream's own answer when it declined the upgrade, which passes through as an
 * HTTP response does (hop-by-hop headers aside). The connection closes after either.
 */
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import { ERRORS, errorBody, JSON_CONTENT_TYPE, type ErrorCode } from '../errors.js'
import { HOP_BY_HOP } from '../http/identity-headers.js'

/** Writes the catalogue's error for `code`; returns its status. */
export function refuseUpgrade (
  socket: Duplex, code: ErrorCode, requestId: string, headers: Record<string, string> = {}
): number {
  const { status } = ERRORS[code]
  const body = errorBody(code)
  let head = statusLine(status) +
    `Content-Type: ${JSON_CONTENT_TYPE}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `X-Request-Id: ${requestId}\r\n`
  for (const name in headers) head += `${name}: ${headers[name] as string}\r\n`
  end(socket, head + 'Connection: close\r\n\r\n' + body)
  return status
}

/**
 * The upstream's answer to an upgrade it declined, read whole (`body`), with the
 * gateway's own `headers` (its RateLimit-*, which replace the upstream's); returns its status.
 */
export function passUpstreamAnswer (
  socket: Duplex, status: number, rawHeaders: readonly string[], body: Buffer, requestId: string,
  headers: Record<string, string> = {}
): number {
  let head = statusLine(status)
  for (const [name, value] of responseHeaders(
    rawHeaders, ['content-length', 'x-request-id', ...Object.keys(headers)]
  )) head += `${name}: ${value}\r\n`
  for (const name in headers) head += `${name}: ${headers[name] as string}\r\n`
  head += `Content-Length: ${body.length}\r\nX-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n`
  end(socket, Buffer.concat([Buffer.from(head, 'latin1'), body]))
  return status
}

/**
 * An upstream response's headers as the client gets them: not the hop-by-hop ones (nor
 * those its `Connection` lists), nor any of `drop` (lower case). Values come from node's
 * HTTP parser, which refuses CR and LF in them.
 */
/** Seconds a client over a connection cap is asked to wait. */
export const CAP_RETRY_AFTER_S = '5'

/** the 101's headers that ws and keygate write, never copied from the upstream's 101 */
export const OWN_101_HEADERS: readonly string[] = [
  'sec-websocket-accept', 'sec-websocket-protocol', 'sec-websocket-extensions', 'x-request-id'
]

export function responseHeaders (rawHeaders: readonly string[], drop: readonly string[]): Array<[string, string]> {
  const listed = new Set<string>(drop)
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).toLowerCase() !== 'connection') continue
    for (const name of (rawHeaders[i + 1] as string).split(',')) listed.add(name.trim().toLowerCase())
  }
  const out: Array<[string, string]> = []
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    const lower = name.toLowerCase()
    if (HOP_BY_HOP.has(lower) || listed.has(lower)) continue
    out.push([name, rawHeaders[i + 1] as string])
  }
  return out
}

function statusLine (status: number): string {
  return `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`
}

function end (socket: Duplex, bytes: string | Buffer): void {
  if (socket.destroyed) return
  socket.once('finish', () => { socket.destroy() })
  socket.end(bytes)
}
