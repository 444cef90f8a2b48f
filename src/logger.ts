/**
 * The process logger: pino, JSON lines on stdout, written asynchronously so that
 * logging stays off the request's critical path. One line per request (see
 * pipeline/request-log.ts); never a key, an Authorization header or a query string.
 */
import { pino, type Logger, type DestinationStream } from 'pino'

export function createLogger (level: string, destination?: DestinationStream): Logger {
  return pino({ level, base: { pid: process.pid } }, destination ?? pino.destination({ dest: 1, sync: false }))
}
