/**
 * The process logger: pino, JSON lines on stdout, written asynchronously so that
 * logging stays off the request's critical path. One line per request (see
 * pipeline/request-log.ts); never a key, an Authorization header or a query string.
 */
import { pino, type Logger, type DestinationStream } from 'pino'

export function createLogger (level: string, destination?: DestinationStream): Logger {
  return pino({ level, base: { pid: process.pid } }, destination ?? new LogSink(1))
}

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
 */
export class LogSink implements DestinationStream {
  private readonly out: ReturnType<typeof pino.destination>

  constructor (fd: number) {
    this.out = pino.destination({ dest: fd, sync: false, contentMode: 'buffer', minLength: 1, maxWrite: 1024 * 1024 })
  }

  /** pino's own lines (start-up, errors): any text */
  write (line: string): void {
    this.writeBytes(Buffer.from(line, 'utf8'))
  }

  /** whole lines, already encoded (the request log's batches) */
  writeBytes (lines: Buffer): void {
    // (sonic-boom's types only describe its string mode)
    (this.out.write as unknown as (data: Buffer) => boolean).call(this.out, lines)
  }

  /** calls back once everything written so far has reached the file descriptor */
  flush (cb: (err?: Error) => void): void {
    this.out.flush(cb)
  }

  /** (pino calls it after a `fatal` line) */
  flushSync (): void {
    this.out.flushSync()
  }
}

/** Flush what the async destination still buffers (at shutdown). */
export async function flushLogger (logger: Logger): Promise<void> {
  await new Promise<void>((resolve) => { logger.flush(() => { resolve() }) })
}
