/**
 * The process logger: pino, JSON lines on stdout, written asynchronously so that
 * logging stays off the request's critical path. One line per request (see
 * pipeline/request-log.ts); never a key, an Authorization header or a query string.
 */
import { pino, type Logger, type DestinationStream } from 'pino'

export function createLogger (level: string, destination?: DestinationStream): Logger {
  // Lines are batched into 4 KiB writes, and flushed at least every 250 ms when traffic is low.
  return pino({ level, base: { pid: process.pid } }, destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 250 }))
}

/** Flush what the async destination still buffers (at shutdown). */
export async function flushLogger (logger: Logger): Promise<void> {
  await new Promise<void>((resolve) => { logger.flush(() => { resolve() }) })
}
