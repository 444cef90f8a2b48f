/**
 * Connection failures to an upstream's origins (refused, unreachable, TLS refused the
 * certificate...) go to the log as a warning: the origin, the error's code and message
 * (no request data), at most once per origin every 10 s, so a dead target under load
 * is one line, not one per request. The request's own log line says `upstream_error`.
 */
import type { Logger } from 'pino'

const EVERY_MS = 10_000

export type ConnectionFailureLog = (origin: string, err: unknown) => void

export function connectionFailureLog (logger: Logger, upstream: string): ConnectionFailureLog {
  const last = new Map<string, number>()
  return (origin, err) => {
    const now = Date.now()
    if (now - (last.get(origin) ?? -Infinity) < EVERY_MS) return
    last.set(origin, now)
    const e = err as { code?: unknown, message?: unknown }
    logger.warn({
      upstream,
      target: origin,
      code: typeof e.code === 'string' ? e.code : undefined,
      error: typeof e.message === 'string' ? e.message.slice(0, 200) : undefined
    }, 'upstream connection failed')
  }
}
