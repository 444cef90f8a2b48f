/**
 * The process logger: pino, JSON lines on stdout, written asynchronously so that
 * logging stays off the request's critical path. One line per request (see
 * pipeline/request-log.ts); never a key, an Authorization header or a query string.
 */
import { pino, type Logger, type DestinationStream } from 'pino'

export function createLogger (level: string, destination?: DestinationStream): Logger {
  // Lines are batched into writes of ~12 KiB (each async write is a threadpool round trip),
  // and flushed at least every 250 ms, so a quiet gateway's lines still appear promptly.
  return pino({ level, base: { pid: process.pid } }, destination ?? pino.destination({ dest: 1, sync: false, minLength: 12_288, periodicFlush: 250 }))
}

/** Flush what the async destination still buffers (at shutdown). */
export async function flushLogger (logger: Logger): Promise<void> {
  await new Promise<void>((resolve) => { logger.flush(() => { resolve() }) })
}
