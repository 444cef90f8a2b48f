/**
 * A raw-socket HTTP/1.1 client for security tests.
 *
 * fetch, undici, light-my-request (fastify.inject) and curl all normalise
 * request targets (dot segments, %-encoding) and headers, which would hide
 * exactly the attacks under test. rawRequest() writes the given bytes
 * unchanged to a TCP socket and parses the first response by hand
 * (Content-Length, chunked transfer coding, or read-until-close).
 *
 * Strings are written as UTF-8; pass a Buffer for arbitrary bytes.
 */
import { connect } from 'node:net'

export interface RawResponse {
  status: number
  statusText: string
  /** Lowercased names; duplicate headers joined with ', '. */
  headers: Record<string, string>
  /** [name, value] pairs exactly as received (original case and order). */
  rawHeaders: Array<[string, string]>
  /** Body decoded as UTF-8 (after chunked decoding). */
  body: string
  /** Body bytes (after chunked decoding). */
  bodyBytes: Buffer
  json(): unknown
  /** True when the server closed the connection or announced `Connection: close`. */
  closed: boolean
}

export interface RawRequestOptions {
  /** Host to connect to; defaults to 127.0.0.1. */
  host?: string
  /** Reject when no complete response arrived in time; defaults to 5000 ms. */
  timeoutMs?: number
}

export type HeaderList = Array<[string, string]> | Record<string, string>

interface ParsedHead {
  status: number
  statusText: string
  headers: Record<string, string>
  rawHeaders: Array<[string, string]>
  bodyStart: number
}

class IncompleteError extends Error {}

const CRLF = Buffer.from('\r\n')
const HEAD_END = Buffer.from('\r\n\r\n')

function parseHead (buf: Buffer, start: number): ParsedHead | undefined {
  const end = buf.indexOf(HEAD_END, start)
  if (end === -1) return undefined
  const lines = buf.subarray(start, end).toString('latin1').split('\r\n')
  const statusLine = lines.shift() ?? ''
  const match = /^HTTP\/\d\.\d (\d{3})(?: (.*))?$/.exec(statusLine)
  if (match === null) throw new Error(`malformed status line: ${JSON.stringify(statusLine)}`)
  const rawHeaders: Array<[string, string]> = []
  for (const line of lines) {
    const last = rawHeaders[rawHeaders.length - 1]
    if ((line.startsWith(' ') || line.startsWith('\t')) && last !== undefined) {
      last[1] += ' ' + line.trim() // obsolete line folding
      continue
    }
    const colon = line.indexOf(':')
    if (colon === -1) rawHeaders.push([line, ''])
    else rawHeaders.push([line.slice(0, colon), line.slice(colon + 1).trim()])
  }
  const headers: Record<string, string> = {}
  for (const [name, value] of rawHeaders) {
    const key = name.toLowerCase()
    const prev = headers[key]
    headers[key] = prev === undefined ? value : `${prev}, ${value}`
  }
  return {
    status: Number(match[1]),
    statusText: match[2] ?? '',
    headers,
    rawHeaders,
    bodyStart: end + HEAD_END.length
  }
}

/** Decodes a chunked body starting at `start`; throws IncompleteError when more bytes are needed. */
function decodeChunked (buf: Buffer, start: number): { body: Buffer, end: number } {
  const parts: Buffer[] = []
  let pos = start
  for (;;) {
    const lineEnd = buf.indexOf(CRLF, pos)
    if (lineEnd === -1) throw new IncompleteError()
    const sizeText = buf.subarray(pos, lineEnd).toString('latin1').split(';')[0]?.trim() ?? ''
    if (!/^[0-9a-fA-F]+$/.test(sizeText)) throw new Error(`malformed chunk size: ${JSON.stringify(sizeText)}`)
    const size = parseInt(sizeText, 16)
    pos = lineEnd + CRLF.length
    if (size === 0) {
      // Trailer section: header lines up to an empty line.
      for (;;) {
        const trailerEnd = buf.indexOf(CRLF, pos)
        if (trailerEnd === -1) throw new IncompleteError()
        const empty = trailerEnd === pos
        pos = trailerEnd + CRLF.length
        if (empty) return { body: Buffer.concat(parts), end: pos }
      }
    }
    if (buf.length < pos + size + CRLF.length) throw new IncompleteError()
    parts.push(buf.subarray(pos, pos + size))
    if (!buf.subarray(pos + size, pos + size + CRLF.length).equals(CRLF)) {
      throw new Error('chunk data not followed by CRLF')
    }
    pos += size + CRLF.length
  }
}

/**
 * Tries to parse one complete response from `buf`. Returns undefined when more
 * bytes are needed (or, with eof, when the body is delimited by the close).
 * Interim 1xx responses (other than 101) are skipped.
 */
function parseResponse (buf: Buffer, isHead: boolean, eof: boolean): RawResponse | undefined {
  let start = 0
  for (;;) {
    const head = parseHead(buf, start)
    if (head === undefined) {
      if (eof) throw new Error(`connection closed mid-response: ${JSON.stringify(buf.toString('latin1').slice(0, 500))}`)
      return undefined
    }
    if (head.status >= 100 && head.status < 200 && head.status !== 101) {
      start = head.bodyStart
      continue
    }
    let bodyBytes: Buffer
    const noBody = isHead || head.status === 204 || head.status === 304 || head.status === 101
    const te = head.headers['transfer-encoding']
    const cl = head.headers['content-length']
    if (noBody) {
      bodyBytes = Buffer.alloc(0)
    } else if (te !== undefined && /(?:^|,)\s*chunked\s*$/i.test(te)) {
      try {
        bodyBytes = decodeChunked(buf, head.bodyStart).body
      } catch (err: unknown) {
        if (!(err instanceof IncompleteError)) throw err
        if (eof) throw new Error('connection closed mid chunked body')
        return undefined
      }
    } else if (te === undefined && cl !== undefined) {
      if (!/^\d+$/.test(cl)) throw new Error(`unusable content-length: ${JSON.stringify(cl)}`)
      const length = Number(cl)
      if (buf.length < head.bodyStart + length) {
        if (eof) throw new Error(`connection closed after ${buf.length - head.bodyStart} of ${length} body bytes`)
        return undefined
      }
      bodyBytes = buf.subarray(head.bodyStart, head.bodyStart + length)
    } else {
      // No framing (or a non-chunked transfer coding): body runs until close.
      if (!eof) return undefined
      bodyBytes = buf.subarray(head.bodyStart)
    }
    const body = bodyBytes.toString('utf8')
    return {
      status: head.status,
      statusText: head.statusText,
      headers: head.headers,
      rawHeaders: head.rawHeaders,
      body,
      bodyBytes,
      json: () => JSON.parse(body) as unknown,
      closed: eof || /(?:^|,)\s*close\s*(?:,|$)/i.test(head.headers.connection ?? '')
    }
  }
}

function emptyResponse (): RawResponse {
  return {
    status: 0,
    statusText: '',
    headers: {},
    rawHeaders: [],
    body: '',
    bodyBytes: Buffer.alloc(0),
    json: () => { throw new Error('no response: the server closed the connection without sending anything') },
    closed: true
  }
}

/**
 * Writes `raw` unchanged to 127.0.0.1:port (or opts.host) and resolves with
 * the first complete response. Resolves with status 0 when the server closes
 * (or resets) the connection without sending a byte; rejects on timeout.
 */
export async function rawRequest (port: number, raw: string | Buffer, opts: RawRequestOptions = {}): Promise<RawResponse> {
  const bytes = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw
  const timeoutMs = opts.timeoutMs ?? 5000
  const isHead = /^HEAD /.test(bytes.subarray(0, 5).toString('latin1'))
  return await new Promise<RawResponse>((resolve, reject) => {
    const socket = connect({ port, host: opts.host ?? '127.0.0.1' })
    let buf = Buffer.alloc(0)
    let connected = false
    let settled = false
    const finish = (err: Error | undefined, res?: RawResponse): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      socket.destroy()
      if (err !== undefined) reject(err)
      else if (res !== undefined) resolve(res)
    }
    const tryParse = (eof: boolean): void => {
      if (settled) return
      if (eof && buf.length === 0) {
        finish(undefined, emptyResponse())
        return
      }
      try {
        const res = parseResponse(buf, isHead, eof)
        if (res !== undefined) finish(undefined, res)
      } catch (err: unknown) {
        finish(err instanceof Error ? err : new Error(String(err)))
      }
    }
    const timer = setTimeout(() => {
      finish(new Error(`rawRequest to port ${port} timed out after ${timeoutMs} ms; received ${buf.length} bytes: ` +
        JSON.stringify(buf.toString('latin1').slice(0, 500))))
    }, timeoutMs)
    socket.on('connect', () => {
      connected = true
      socket.write(bytes)
    })
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      tryParse(false)
    })
    socket.on('end', () => tryParse(true))
    socket.on('error', (err: NodeJS.ErrnoException) => {
      // A server that rejects a request often closes (or resets) the socket
      // while we are still writing: still report what it sent, if anything.
      if (connected && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) tryParse(true)
      else finish(err)
    })
    socket.on('close', () => tryParse(true))
  })
}

/**
 * Builds a raw HTTP/1.1 request exactly as given: no normalisation of the
 * method, target, header names or values. Adds `Host: localhost` only when no
 * header is named host (case-insensitively), `Connection: close` only when no
 * connection header is given, and Content-Length (UTF-8 byte length) only when
 * a body is given without a content-length or transfer-encoding header.
 */
export function req (method: string, target: string, headers: HeaderList = {}, body?: string): string {
  const list: Array<[string, string]> = Array.isArray(headers) ? headers : Object.entries(headers)
  const has = (name: string): boolean => list.some(([n]) => n.toLowerCase() === name)
  const lines = [`${method} ${target} HTTP/1.1`]
  if (!has('host')) lines.push('Host: localhost')
  for (const [name, value] of list) lines.push(`${name}: ${value}`)
  if (!has('connection')) lines.push('Connection: close')
  if (body !== undefined && !has('content-length') && !has('transfer-encoding')) {
    lines.push(`Content-Length: ${Buffer.byteLength(body, 'utf8')}`)
  }
  return lines.join('\r\n') + '\r\n\r\n' + (body ?? '')
}

/** rawRequest(port, req(method, target, headers, body), opts) */
export async function send (
  port: number,
  method: string,
  target: string,
  headers: HeaderList = {},
  body?: string,
  opts?: RawRequestOptions
): Promise<RawResponse> {
  return await rawRequest(port, req(method, target, headers, body), opts)
}
