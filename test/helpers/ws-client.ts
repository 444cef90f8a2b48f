/**
 * A WebSocket client (ws) for pass-through tests: opens a connection through the
 * gateway, and keeps what it received and how it was closed. For refusals, whose
 * bytes matter, tests use raw sockets (wsUpgrade below, on raw-http.ts).
 */
import { WebSocket } from 'ws'
import { send, type HeaderList, type RawResponse } from './raw-http.js'

export interface OpenedClient {
  socket: WebSocket
  /** the 101's headers */
  headers: Record<string, string | string[] | undefined>
  received: Array<{ data: Buffer, binary: boolean }>
  /** resolves with the close the client saw */
  closed: Promise<{ code: number, reason: string, at: number }>
  /** resolves with the next message */
  next: () => Promise<{ data: Buffer, binary: boolean }>
}

export interface ClientOptions {
  key?: string
  headers?: Record<string, string>
  protocols?: string[]
  maxPayload?: number
}

/** Opens a WebSocket to the gateway; rejects with the status when the upgrade is refused. */
export async function openClient (port: number, target: string, o: ClientOptions = {}): Promise<OpenedClient> {
  const headers: Record<string, string> = { ...o.headers }
  if (o.key !== undefined) headers.Authorization = `Bearer ${o.key}`
  const socket = new WebSocket(`ws://127.0.0.1:${port}${target}`, o.protocols ?? [], { headers, perMessageDeflate: false, maxPayload: o.maxPayload ?? 64 * 1024 * 1024 })
  const received: Array<{ data: Buffer, binary: boolean }> = []
  const waiting: Array<(m: { data: Buffer, binary: boolean }) => void> = []
  socket.on('message', (data: Buffer, binary: boolean) => {
    const m = { data, binary }
    received.push(m)
    waiting.shift()?.(m)
  })
  const closed = new Promise<{ code: number, reason: string, at: number }>((resolve) => {
    socket.on('close', (code, reason) => { resolve({ code, reason: reason.toString(), at: Date.now() }) })
  })
  let upgradeHeaders: Record<string, string | string[] | undefined> = {}
  socket.on('upgrade', (res) => { upgradeHeaders = res.headers })
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => { resolve() })
    socket.once('unexpected-response', (_req, res) => {
      reject(Object.assign(new Error(`upgrade refused: ${String(res.statusCode)}`), { status: res.statusCode }))
      socket.terminate()
    })
    socket.once('error', reject)
  })
  socket.on('error', () => {})
  return {
    socket,
    headers: upgradeHeaders,
    received,
    closed,
    next: async () => await new Promise((resolve) => { waiting.push(resolve) })
  }
}

/** A raw upgrade request (GET with the WebSocket handshake headers and `extra`), and the response. */
export async function wsUpgrade (port: number, target: string, extra: HeaderList = {}, method = 'GET'): Promise<RawResponse> {
  const list: Array<[string, string]> = [
    ['Connection', 'Upgrade'],
    ['Upgrade', 'websocket'],
    ['Sec-WebSocket-Version', '13'],
    ['Sec-WebSocket-Key', 'dGhlIHNhbXBsZSBub25jZQ=='],
    ...(Array.isArray(extra) ? extra : Object.entries(extra))
  ]
  // (later entries of the same name replace the defaults)
  const byName = new Map<string, [string, string]>()
  for (const [name, value] of list) byName.set(name.toLowerCase(), [name, value])
  return await send(port, method, target, [...byName.values()])
}
