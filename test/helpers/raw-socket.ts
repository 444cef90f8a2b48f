/**
 * A raw TCP conversation for tests that must write a request in steps: a head now,
 * its body later (or never), reading what the server says in between.
 * rawRequest() (raw-http.ts) writes everything at once and cannot show what a server
 * sends before the body, such as an interim `100 Continue`, or what it does to a
 * client that stops sending.
 */
import { connect, type Socket } from 'node:net'

export interface RawConversation {
  socket: Socket
  /** every byte received so far, as latin1 text */
  received: () => string
  write: (bytes: string | Buffer) => void
  /** resolves when what was received matches `pattern`; rejects after `ms` */
  waitFor: (pattern: RegExp, ms?: number) => Promise<string>
  /** resolves when the server closed the connection (or reset it); rejects after `ms` */
  waitClosed: (ms?: number) => Promise<void>
  isClosed: () => boolean
}

export async function openConversation (port: number, host = '127.0.0.1'): Promise<RawConversation> {
  const socket = connect({ port, host })
  let text = ''
  let closed = false
  const waiters = new Set<() => void>()
  const wake = (): void => { for (const w of [...waiters]) w() }
  socket.on('data', (chunk: Buffer) => { text += chunk.toString('latin1'); wake() })
  socket.on('error', () => {})
  const closedPromise = new Promise<void>((resolve) => socket.on('close', () => { closed = true; wake(); resolve() }))
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve())
    socket.once('error', reject)
  })
  return {
    socket,
    received: () => text,
    write: (bytes) => { socket.write(bytes) },
    waitClosed: async (ms = 5000) => {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`still open after ${ms} ms; received ${JSON.stringify(text.slice(0, 500))}`)), ms)
      })
      try {
        await Promise.race([closedPromise, late])
      } finally {
        clearTimeout(timer)
      }
    },
    isClosed: () => closed,
    waitFor: async (pattern, ms = 5000) => await new Promise<string>((resolve, reject) => {
      const check = (): void => {
        if (pattern.test(text)) done(undefined)
        else if (closed) done(new Error(`connection closed before ${String(pattern)}; received ${JSON.stringify(text.slice(0, 500))}`))
      }
      const timer = setTimeout(() => done(new Error(`no ${String(pattern)} within ${ms} ms; received ${JSON.stringify(text.slice(0, 500))}`)), ms)
      const done = (err: Error | undefined): void => {
        clearTimeout(timer)
        waiters.delete(check)
        if (err === undefined) resolve(text)
        else reject(err)
      }
      waiters.add(check)
      check()
    })
  }
}
