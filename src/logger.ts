/**
 * The process logger: pino, JSON lines on stdout, written asynchronously so that
 * logging stays off the request's critical path. One line per request (see
 * http/request-log.ts); never a key, an Authorization header or a query string.
 * `log.format: pretty` turns the same lines into text for a person at a terminal
 * (pino-pretty: level names, local time, one line each); JSON stays the format for machines.
 */
import { createRequire } from 'node:module'
import { pino, type Logger, type DestinationStream } from 'pino'
import type PinoPretty from 'pino-pretty'

export type LogFormat = 'json' | 'pretty'

export function createLogger (level: string, destination?: DestinationStream, format: LogFormat = 'json'): Logger {
  const out = destination ?? (format === 'pretty' ? prettyStdout() : new LogSink(1))
  return pino({ level, base: { pid: process.pid } }, out)
}

/**
 * Text lines on stdout: `[2026-11-29 02:41:07.123 +0000] INFO (4242): request {...}`, coloured on a terminal.
 * (It takes JSON text, so the request log's lines go through it as they are.) pino-pretty and its 30 modules are
 * loaded only here: a JSON log, the default, never needs them.
 */
function prettyStdout (): DestinationStream {
  const pretty = createRequire(import.meta.url)('pino-pretty') as typeof PinoPretty
  return pretty({
    destination: 1,
    sync: false,
    colorize: process.stdout.isTTY,
    singleLine: true,
    translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l o'
  })
}

/** Where the logger writes: a LogSink, or a test's own destination. */
export function destinationOf (logger: Logger): DestinationStream {
  return (logger as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym] as DestinationStream
}

/** The logger's LogSink, when it writes to one. */
export function sinkOf (logger: Logger): LogSink | undefined {
  const stream = destinationOf(logger)
  return stream instanceof LogSink ? stream : undefined
}

/** What the log could not write, for /metrics. */
export interface LogSinkStats {
  /** failed writes to the file descriptor (EPIPE: nobody reads stdout any more; EIO, ENOSPC) */
  writeErrors: number
  /** lines dropped: `maxBufferBytes` were already waiting to be written, or a write had failed */
  droppedLines: number
}

/** 16 MiB: about 60,000 request lines waiting for a stalled stdout */
export const LOG_BUFFER_BYTES = 16 * 1024 * 1024

/**
 * stdout, written asynchronously (each write is a threadpool round trip, never a
 * blocking call on the event loop) by pino's own writer, sonic-boom, in its buffer
 * mode: in its string mode it measures the UTF-8 length of its whole pending buffer
 * on every write and encodes each batch twice, which cost more than the rest of the
 * request line. Here each line is encoded once: pino's own lines as UTF-8 here, the
 * request log's lines as they are copied into its batches.
 *
 * The request log batches its lines itself (64 KiB, or every 100 ms), so every batch
 * is handed to the kernel at once (`minLength: 1`); whatever arrives while a write is
 * in flight is merged into the next one (up to `maxWrite`).
 *
 * A log that cannot be written never stops the gateway, as with nginx's or Envoy's
 * access logs, and what is lost is counted on /metrics:
 * - stdout stalled (a log shipper that stopped reading): at most `maxBufferBytes` wait
 *   (sonic-boom's `maxLength`); newer lines are dropped until the reader catches up.
 * - a failed write (EPIPE: nobody reads stdout any more; EIO, ENOSPC): the log ends
 *   there, and the lines after it are dropped. pino does this itself for EPIPE; any
 *   other error it re-emits, and with no listener it would end the process, while
 *   sonic-boom's synchronous flush, which pino calls at exit, would retry the failed
 *   write forever: so the destination is made inert, as pino does for EPIPE.
 */
export class LogSink implements DestinationStream {
  private readonly out: ReturnType<typeof pino.destination>
  readonly stats: LogSinkStats = { writeErrors: 0, droppedLines: 0 }
  private broken = false
  private lastError: unknown

  constructor (fd: number, o: { maxBufferBytes?: number } = {}) {
    this.out = pino.destination({
      dest: fd,
      sync: false,
      contentMode: 'buffer',
      minLength: 1,
      maxWrite: 1024 * 1024,
      maxLength: o.maxBufferBytes ?? LOG_BUFFER_BYTES
    })
    this.out.on('error', (err: unknown) => {
      if (err === this.lastError) return // (pino re-emits the errors it does not handle)
      this.lastError = err
      this.stats.writeErrors++
      if (this.broken) return
      this.broken = true
      // (writeBytes stops writing to it; these are what pino's exit handler calls)
      const inert = this.out as unknown as Record<'end' | 'flushSync' | 'flush', (cb?: unknown) => void>
      inert.end = noop
      inert.flushSync = noop
      const flush = (cb?: unknown): void => { if (typeof cb === 'function') (cb as () => void)() }
      inert.flush = flush
    })
    this.out.on('drop', (data: Buffer) => { this.stats.droppedLines += countLines(data) })
  }

  /** pino's own lines (start-up, errors): any text */
  write (line: string): void {
    this.writeBytes(Buffer.from(line, 'utf8'))
  }

  /** whole lines, already encoded (the request log's batches) */
  writeBytes (lines: Buffer): void {
    if (this.broken) {
      this.stats.droppedLines += countLines(lines)
      return
    }
    // (sonic-boom's types only describe its string mode)
    (this.out.write as unknown as (data: Buffer) => boolean).call(this.out, lines)
  }

  /** calls back once everything written so far has reached the file descriptor */
  flush (cb: (err?: Error) => void): void {
    this.out.flush(cb)
  }

  /** (pino calls it after a `fatal` line; a broken stdout must not turn that into a throw) */
  flushSync (): void {
    try {
      this.out.flushSync()
    } catch {
      this.stats.writeErrors++
    }
  }
}

function noop (): void {}

function countLines (data: Buffer): number {
  let n = 0
  for (let i = data.indexOf(10); i !== -1; i = data.indexOf(10, i + 1)) n++
  return n
}

/**
 * Flush what the async destination still buffers (at shutdown), waiting at most
 * `timeoutMs`: a stalled stdout must not keep a stopping gateway alive.
 */
export async function flushLogger (logger: Logger, timeoutMs = 2000): Promise<void> {
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs)
    timer.unref()
    logger.flush(() => { clearTimeout(timer); resolve() })
  })
}
