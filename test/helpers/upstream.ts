/**
 * A real HTTP upstream for proxy tests, built on node:http (not fastify, so
 * nothing between the socket and the recorded request normalises anything).
 *
 * Every request is recorded (after its body has been fully read) before the
 * current mode decides how to answer:
 *   'echo' (default)  200 application/json { method, url, headers }, plus
 *                     response header `x-upstream: yes`
 *   status            fixed reply (status, optional body and headers)
 *   slow              waits delayMs, then echoes
 *   reset             destroys the socket with a TCP RST, no response
 *   hang              never answers
 * close() destroys all open sockets and pending timers, so it never hangs.
 */
import { createServer } from 'node:http'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { freePort } from './net.js'

export type UpstreamMode =
  | 'echo'
  | { kind: 'echo' }
  | { kind: 'status', status: number, body?: string, headers?: Record<string, string> }
  | { kind: 'slow', delayMs: number }
  | { kind: 'reset' }
  | { kind: 'hang' }

export interface RecordedRequest {
  method: string
  /** Exactly req.url as received (the request-target, byte for byte). */
  url: string
  /** Node's parsed headers: lowercased names, duplicates combined. */
  headers: Record<string, string | string[] | undefined>
  /** Alternating name/value list as received (original case and order). */
  rawHeaders: string[]
  body: Buffer
}

/** Every value the upstream received under `name` (case-insensitive), as sent. */
export function rawValues (req: RecordedRequest | undefined, name: string): string[] {
  const out: string[] = []
  const raw = req?.rawHeaders ?? []
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]?.toLowerCase() === name.toLowerCase()) out.push(raw[i + 1] ?? '')
  }
  return out
}

export interface Upstream {
  /** http://127.0.0.1:PORT (no trailing slash) */
  url: string
  port: number
  requests: RecordedRequest[]
  last(): RecordedRequest | undefined
  close(): Promise<void>
  setMode(mode: UpstreamMode): void
}

export interface StartUpstreamOptions {
  /** Initial mode; defaults to 'echo'. */
  mode?: UpstreamMode
}

/** JSON body sent by the echo mode. */
export interface EchoBody {
  method: string
  url: string
  headers: Record<string, string | string[] | undefined>
}

export async function startUpstream (opts: StartUpstreamOptions = {}): Promise<Upstream> {
  let mode: UpstreamMode = opts.mode ?? 'echo'
  const requests: RecordedRequest[] = []
  const timers = new Set<NodeJS.Timeout>()
  let closed = false

  const echo = (rec: RecordedRequest, res: ServerResponse): void => {
    const body: EchoBody = { method: rec.method, url: rec.url, headers: rec.headers }
    const payload = JSON.stringify(body)
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(payload),
      'x-upstream': 'yes'
    })
    res.end(payload)
  }

  const answer = (rec: RecordedRequest, req: IncomingMessage, res: ServerResponse): void => {
    const m = mode === 'echo' ? { kind: 'echo' as const } : mode
    switch (m.kind) {
      case 'echo':
        echo(rec, res)
        return
      case 'status': {
        const body = m.body ?? ''
        const headers: Record<string, string> = { ...m.headers }
        const names = Object.keys(headers).map((name) => name.toLowerCase())
        const bodyless = m.status === 204 || m.status === 304 || (m.status >= 100 && m.status < 200)
        if (!bodyless && !names.includes('content-length') && !names.includes('transfer-encoding')) {
          headers['content-length'] = String(Buffer.byteLength(body))
        }
        res.writeHead(m.status, headers)
        if (bodyless) res.end()
        else res.end(body)
        return
      }
      case 'slow': {
        const timer = setTimeout(() => {
          timers.delete(timer)
          if (!res.destroyed) echo(rec, res)
        }, m.delayMs)
        timers.add(timer)
        return
      }
      case 'reset':
        req.socket.resetAndDestroy()
        break
      case 'hang':
        break // never answer; close() destroys the socket
    }
  }

  const server = createServer({ requireHostHeader: false }, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('error', () => {}) // client went away mid-body: nothing to record
    req.on('end', () => {
      const rec: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: { ...req.headers },
        rawHeaders: [...req.rawHeaders],
        body: Buffer.concat(chunks)
      }
      requests.push(rec)
      answer(rec, req, res)
    })
  })

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    last: () => requests[requests.length - 1],
    setMode: (next: UpstreamMode) => { mode = next },
    close: async () => {
      if (closed) return
      closed = true
      for (const timer of timers) clearTimeout(timer)
      timers.clear()
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
    }
  }
}

/**
 * A 127.0.0.1 port with nothing listening on it (connections are refused).
 * Like any free-port probe this is racy in theory; in practice the kernel
 * does not hand the same ephemeral port out again immediately.
 */
export async function refusedPort (): Promise<number> {
  return await freePort()
}
