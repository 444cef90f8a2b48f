/**
 * The upstream half of a WebSocket: the opening handshake with the route's upstream
 * (`ws://` or `wss://` for its `http://` or `https://` origin), sent with the identity
 * headers and the client's subprotocol offers, for the path the decision was taken on
 * and the client's raw query, byte for byte (the request line is written as decided,
 * never re-serialised by a URL parser). TLS verification stays on.
 *
 * What can come of it, as the HTTP proxy maps an upstream request's fate:
 *   open        the upstream switched protocols (101, a valid accept, a subprotocol it
 *               was offered): the client's handshake may complete
 *   answer      it declined with an HTTP response: passed through to the client, its
 *               body read up to ANSWER_BYTES (a larger one is a 502)
 *   error       refused, reset, unreachable, connect timeout, an invalid handshake: 502
 *   timeout     no answer within the upstream's timeout_ms: 504
 */
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import { WebSocket, type ClientOptions } from 'ws'
import type { ConnectionOptions } from 'node:tls'
import type { UpstreamConfig } from '../config/schema.js'
import type { Identity } from '../decision/identity.js'
import type { Route } from '../decision/route-table.js'

/** The largest body of a declined upgrade the gateway passes through. */
export const ANSWER_BYTES = 64 * 1024

export type UpstreamOutcome =
  | { kind: 'open', socket: WebSocket, rawHeaders: readonly string[] }
  | { kind: 'answer', status: number, rawHeaders: readonly string[], body: Buffer }
  | { kind: 'error', error: unknown }
  | { kind: 'timeout', error: unknown }

export interface UpstreamHandshake {
  outcome: Promise<UpstreamOutcome>
  /** the client went away: give up (the outcome settles as an error) */
  abort: () => void
}

export interface UpstreamOptions {
  upstream: UpstreamConfig
  /** the origin the handshake goes to (the url, or a target that is up); undefined: none is up, a 502 */
  origin: string | undefined
  /** TLS for a `wss://` origin: the upstream's CA, client certificate and servername (verification stays on) */
  tls: ConnectionOptions
  /** the path decided on and the raw query, as the request line carries them */
  target: string
  headers: IncomingHttpHeaders
  protocols: string[]
  maxPayload: number
  closeTimeoutMs: number
}

const CONNECT_TIMEOUT = Object.assign(new Error('upstream connect timeout'), { code: 'UND_ERR_CONNECT_TIMEOUT' })
const RESPONSE_TIMEOUT = Object.assign(new Error('upstream timeout'), { code: 'ETIMEDOUT' })
const ANSWER_TOO_LARGE = new Error('upstream answer too large')
const NO_TARGET = Object.assign(new Error('no healthy target'), { code: 'KEYGATE_NO_HEALTHY_TARGET' })
const ABORTED = Object.assign(new Error('client gone'), { code: 'ECONNABORTED' })

/**
 * The upstream an upgrade goes to: the route's, or for a test key its `test_upstream`
 * (docs/test-keys.md); undefined when there is none (the environment stage refused such
 * a test key already: this never falls back to the live upstream).
 */
export function upstreamFor (
  upstreams: Readonly<Record<string, UpstreamConfig>>, route: Route, identity: Identity
): [string, UpstreamConfig] | undefined {
  const name = identity.env === 'test' ? route.test_upstream : route.upstream
  const upstream = name === undefined ? undefined : upstreams[name]
  return name === undefined || upstream === undefined ? undefined : [name, upstream]
}

export function openUpstream (o: UpstreamOptions): UpstreamHandshake {
  let settle!: (outcome: UpstreamOutcome) => void
  let settled = false
  const outcome = new Promise<UpstreamOutcome>((resolve) => { settle = resolve })
  let request: ClientRequest | undefined
  let upgradeHeaders: readonly string[] = []

  const options: ClientOptions & { closeTimeout: number, servername?: string } = {
    // (node's http.request also takes a list for a repeated header, as the rewriter may give)
    headers: o.headers as Record<string, string>,
    // no compression either way: messages pass as they are, and a small compressed
    // message cannot inflate into a large one inside the gateway
    perMessageDeflate: false,
    maxPayload: o.maxPayload,
    // pings and pongs are relayed end to end (relay.ts), never answered here
    autoPong: false,
    followRedirects: false,
    closeTimeout: o.closeTimeoutMs,
    // the request line as decided (ws would write the path as WHATWG URL re-serialised it)
    finishRequest (req) {
      request = req
      req.path = o.target
      req.on('socket', (socket: Socket) => {
        if (socket.connecting) socket.once('connect', () => { clearTimeout(connectTimer) })
        else clearTimeout(connectTimer)
      })
      req.end()
    }
  }

  if (o.origin === undefined) return { outcome: Promise.resolve({ kind: 'error', error: NO_TARGET }), abort: () => {} }
  // an https:// upstream's TLS files and name (set only when configured)
  if (o.tls.ca !== undefined) options.ca = o.tls.ca
  if (o.tls.cert !== undefined) options.cert = o.tls.cert
  if (o.tls.key !== undefined) options.key = o.tls.key
  if (o.tls.servername !== undefined) options.servername = o.tls.servername

  let socket: WebSocket
  try {
    socket = new WebSocket(o.origin, o.protocols, options)
  } catch (error: unknown) {
    // (an offer ws refuses; the client's offers were already parsed by ws's server side)
    return { outcome: Promise.resolve({ kind: 'error', error }), abort: () => {} }
  }

  const finish = (result: UpstreamOutcome): void => {
    if (settled) return
    settled = true
    clearTimeout(connectTimer)
    clearTimeout(responseTimer)
    if (result.kind !== 'open') socket.terminate()
    settle(result)
  }
  const connectTimer = setTimeout(() => {
    finish({ kind: 'error', error: CONNECT_TIMEOUT })
  }, o.upstream.connect_timeout_ms)
  const responseTimer = setTimeout(() => {
    finish({ kind: 'timeout', error: RESPONSE_TIMEOUT })
  }, o.upstream.timeout_ms)

  // (an error after the outcome, such as the abort of a declined upgrade, changes nothing)
  socket.on('error', (error) => { finish({ kind: 'error', error }) })
  socket.on('upgrade', (res: IncomingMessage) => { upgradeHeaders = res.rawHeaders })
  socket.on('open', () => {
    // nothing is read until the relay listens (relay.ts resumes it): a message the
    // upstream sends with its 101 would otherwise be emitted to no one
    socket.pause()
    finish({ kind: 'open', socket, rawHeaders: upgradeHeaders })
  })
  socket.on('unexpected-response', (_req: ClientRequest, res: IncomingMessage) => {
    const chunks: Buffer[] = []
    let length = 0
    res.on('data', (chunk: Buffer) => {
      length += chunk.length
      if (length > ANSWER_BYTES) {
        finish({ kind: 'error', error: ANSWER_TOO_LARGE })
        return
      }
      chunks.push(chunk)
    })
    res.on('end', () => {
      finish({ kind: 'answer', status: res.statusCode ?? 502, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) })
    })
    res.on('error', (error) => { finish({ kind: 'error', error }) })
  })

  return {
    outcome,
    abort () {
      request?.destroy()
      finish({ kind: 'error', error: ABORTED })
    }
  }
}
