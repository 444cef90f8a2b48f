/**
 * A real WebSocket upstream for WebSocket pass-through tests (ws on node:http, port 0).
 *
 * Every upgrade request is recorded (target and raw headers, as received) before the
 * current mode answers it:
 *   'echo' (default)  upgrades, and sends every message back as it came (text as text,
 *                     binary as binary); picks the first subprotocol offered
 *   'greet'           as echo, and sends `hello` the moment the connection is open
 *   'refuse'          answers `status` with a small JSON body and no upgrade
 * Each accepted connection is kept in `connections` with the close code and reason it
 * received. `pause()` stops reading every connection (a slow reader), `resume()` reads
 * again. Plain HTTP requests get 200 `plain`. close() ends everything.
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { WebSocketServer, type WebSocket } from 'ws'

export interface UpgradeRecord {
  url: string
  rawHeaders: string[]
  headers: IncomingMessage['headers']
}

export interface UpstreamConnection {
  socket: WebSocket
  request: UpgradeRecord
  /** messages received, in order */
  received: Array<{ data: Buffer, binary: boolean }>
  /** set once the gateway closed it */
  closed?: { code: number, reason: string }
  closedAt?: number
}

export type WsUpstreamMode = { kind: 'echo' } | { kind: 'greet' } | { kind: 'refuse', status: number }

export interface WsUpstream {
  /** http://127.0.0.1:PORT (the config's upstream url) */
  url: string
  port: number
  upgrades: UpgradeRecord[]
  connections: UpstreamConnection[]
  setMode: (mode: WsUpstreamMode) => void
  /** stop reading from every connection (and every new one) */
  pause: () => void
  resume: () => void
  close: () => Promise<void>
}

export async function startWsUpstream (): Promise<WsUpstream> {
  let mode: WsUpstreamMode = { kind: 'echo' }
  let paused = false
  const upgrades: UpgradeRecord[] = []
  const connections: UpstreamConnection[] = []
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 * 1024, handleProtocols: (offers) => offers.values().next().value ?? false })
  const server = createServer((_req, res) => { res.end('plain') })
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    const record: UpgradeRecord = { url: req.url ?? '', rawHeaders: [...req.rawHeaders], headers: { ...req.headers } }
    upgrades.push(record)
    if (mode.kind === 'refuse') {
      const body = JSON.stringify({ upstream: 'refused' })
      socket.end(`HTTP/1.1 ${mode.status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nX-Upstream: yes\r\nConnection: close\r\n\r\n${body}`)
      return
    }
    const greet = mode.kind === 'greet'
    wss.handleUpgrade(req, socket, head, (ws) => {
      if (greet) ws.send('hello')
      const conn: UpstreamConnection = { socket: ws, request: record, received: [] }
      connections.push(conn)
      if (paused) ws.pause()
      ws.on('message', (data: Buffer, binary: boolean) => {
        conn.received.push({ data, binary })
        ws.send(data, { binary })
      })
      ws.on('close', (code, reason) => {
        conn.closed = { code, reason: reason.toString() }
        conn.closedAt = Date.now()
      })
      ws.on('error', () => {})
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    upgrades,
    connections,
    setMode: (next) => { mode = next },
    pause () {
      paused = true
      for (const c of connections) c.socket.pause()
    },
    resume () {
      paused = false
      for (const c of connections) c.socket.resume()
    },
    async close () {
      for (const c of connections) c.socket.terminate()
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    }
  }
}
