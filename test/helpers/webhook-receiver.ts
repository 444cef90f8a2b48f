/**
 * A webhook receiver for tests: a real HTTP server on 127.0.0.1 that records every
 * request and verifies its signature with the `standardwebhooks` library (the way a
 * customer's receiver does). `answer` decides each status (default 200), `delayMs` how long
 * it holds each request before answering (a slow receiver); `close` and
 * `reopen` (same port) make a receiver that is down for a while.
 */
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'

export interface Received {
  headers: Record<string, string | string[] | undefined>
  body: string
  /** the signature verified with the secret set at the time (undefined: no secret set) */
  verified: boolean | undefined
  id: string
}

export interface Receiver {
  url: string
  port: number
  received: Received[]
  secret: string | undefined
  answer: (r: Received, n: number) => { status: number, headers?: Record<string, string> }
  delayMs: number
  close: () => Promise<void>
  reopen: () => Promise<void>
}

export async function startReceiver (port = 0): Promise<Receiver> {
  let server: Server
  const r: Receiver = {
    url: '',
    port: 0,
    received: [],
    secret: undefined,
    answer: () => ({ status: 200 }),
    delayMs: 0,
    close: async () => { await new Promise<void>((resolve) => { server.close(() => { resolve() }); server.closeAllConnections() }) },
    reopen: async () => { await listen(r.port) }
  }
  const listen = async (p: number): Promise<void> => {
    server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8')
        let verified: boolean | undefined
        if (r.secret !== undefined) {
          try {
            new Webhook(r.secret).verify(body, req.headers as Record<string, string>)
            verified = true
          } catch {
            verified = false
          }
        }
        const got: Received = { headers: req.headers, body, verified, id: String(req.headers['webhook-id']) }
        r.received.push(got)
        const a = r.answer(got, r.received.length)
        setTimeout(() => {
          res.writeHead(a.status, a.headers ?? {})
          res.end('ok')
        }, r.delayMs)
      })
    })
    await new Promise<void>((resolve) => server.listen(p, '127.0.0.1', () => { resolve() }))
    r.port = (server.address() as AddressInfo).port
    r.url = `http://127.0.0.1:${r.port}/hook`
  }
  await listen(port)
  return r
}
