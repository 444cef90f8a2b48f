// A light client for a fixed-rate flood of forged keys: a few keep-alive sockets,
// requests written (pipelined) on a 10 ms tick and responses counted by their status
// lines. autocannon at a fixed rate costs the load generator's core far more per
// request, and that core also drives the load being measured beside the flood.
import { connect, type Socket } from 'node:net'
import { nextForgedKey } from './forged-keys.js'

export interface FloodResult {
  sent: number
  statusCounts: Record<string, number>
  errors: number
}

const SOCKETS = 4
const TICK_MS = 10
const STATUS_LINE = /HTTP\/1\.1 (\d{3}) /g

export async function floodAt (port: number, path: string, rate: number, durationSec: number): Promise<FloodResult> {
  const statusCounts: Record<string, number> = {}
  let received = 0
  let errors = 0
  const sockets: Socket[] = await Promise.all(Array.from({ length: SOCKETS }, async () =>
    await new Promise<Socket>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => { resolve(socket) })
      socket.setNoDelay(true)
      let tail = ''
      socket.on('data', (chunk: Buffer) => {
        const text = tail + chunk.toString('latin1')
        for (const m of text.matchAll(STATUS_LINE)) {
          statusCounts[m[1] as string] = (statusCounts[m[1] as string] ?? 0) + 1
          received++
        }
        // (a status line cut by the chunk boundary is read with the next chunk)
        const cut = text.lastIndexOf('HTTP/1.1 ')
        tail = cut >= 0 && cut > text.length - 13 ? text.slice(cut) : ''
      })
      socket.on('error', (err) => { errors++; reject(err) })
    })))
  let sent = 0
  const start = performance.now()
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsed = performance.now() - start
      if (elapsed >= durationSec * 1000) {
        clearInterval(timer)
        resolve()
        return
      }
      const due = Math.floor(elapsed * rate / 1000)
      for (; sent < due; sent++) {
        (sockets[sent % SOCKETS] as Socket).write(
          `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${nextForgedKey()}\r\n\r\n`
        )
      }
    }, TICK_MS)
  })
  const waitUntil = performance.now() + 2000
  const answered = (): boolean => received >= sent || performance.now() >= waitUntil
  while (!answered()) await new Promise((resolve) => setTimeout(resolve, 10))
  for (const socket of sockets) socket.destroy()
  return { sent, statusCounts, errors: errors + (sent - received) }
}
