/**
 * An upstream that watches request bodies as they arrive, for tests about what
 * reaches an upstream before (or instead of) a complete request: bytes counted as
 * they come, whether the request ended or was aborted, whether its connection has
 * closed, and how many connections the gateway holds open to it. It answers 200 once a body has ended.
 */
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'

export interface WatchedRequest {
  method: string
  url: string
  rawHeaders: string[]
  /** body bytes received so far */
  bytes: number
  ended: boolean
  /** the connection closed before the body ended */
  aborted: boolean
  /** the connection that carried the request has closed */
  connectionClosed: boolean
}

export interface WatchingUpstream {
  url: string
  requests: WatchedRequest[]
  /** connections currently open from the gateway */
  openConnections: () => number
  close: () => Promise<void>
}

export async function startWatchingUpstream (): Promise<WatchingUpstream> {
  const requests: WatchedRequest[] = []
  const sockets = new Set<Socket>()
  const server = createServer((request: IncomingMessage, res) => {
    const rec: WatchedRequest = { method: request.method ?? '', url: request.url ?? '', rawHeaders: [...request.rawHeaders], bytes: 0, ended: false, aborted: false, connectionClosed: false }
    requests.push(rec)
    request.socket.once('close', () => { rec.connectionClosed = true })
    request.on('data', (chunk: Buffer) => { rec.bytes += chunk.length })
    request.on('error', () => {})
    request.on('end', () => {
      rec.ended = true
      res.writeHead(200, { 'content-type': 'text/plain' })
      res.end(`got ${rec.bytes}`)
    })
    request.on('close', () => { if (!rec.ended) rec.aborted = true })
  })
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    openConnections: () => sockets.size,
    close: async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}
