/**
 * A Redis outage, said plainly in the log, once each: an `error` line when Redis stops
 * answering (its URL, passwords redacted), an `error` line when the stale window
 * (`cache.stale_if_error_s`, counted from Redis's last answer) ends and every request that
 * needs the registry gets 503, and an `info` line when Redis answers again. The lines
 * follow RedisHealth (redis-client.ts), so a flapping connection logs a change, never a retry.
 */
import type { Logger } from 'pino'
import { redactedUrl } from '../config/redis-url.js'
import type { RedisHealth } from './redis-client.js'

export interface OutageLogOptions {
  /** `redis.url` as configured (it is logged redacted) */
  url: string
  /** `cache.stale_if_error_s` in ms */
  staleIfErrorMs: number
  now?: () => number
}

export interface OutageLog {
  /** stop the stale-window timer (at close) */
  stop: () => void
}

export function logRedisOutages (health: RedisHealth, logger: Logger, o: OutageLogOptions): OutageLog {
  const now = o.now ?? Date.now
  const redis = redactedUrl(o.url)
  const staleS = o.staleIfErrorMs / 1000
  let downSince: number | undefined
  let staleTimer: NodeJS.Timeout | undefined

  const staleEnded = (): void => {
    staleTimer = undefined
    if (health.up || downSince === undefined) return
    logger.error(
      { redis, unreachable_s: seconds(now() - downSince), stale_if_error_s: staleS },
      'redis: still unreachable and the stale window has ended: every request that needs the registry now gets 503'
    )
  }

  health.onChange((up) => {
    if (!up) {
      downSince = now()
      logger.error(
        { redis, stale_if_error_s: staleS },
        'redis: unreachable; cached decisions are served for at most the stale window, ' +
          'requests that need the registry get 503'
      )
      clearTimeout(staleTimer)
      staleTimer = setTimeout(staleEnded, Math.max(0, health.lastOkAt + o.staleIfErrorMs - now()))
      staleTimer.unref()
      return
    }
    clearTimeout(staleTimer)
    staleTimer = undefined
    if (downSince === undefined) return
    logger.info({ redis, unreachable_s: seconds(now() - downSince) }, 'redis: reachable again')
    downSince = undefined
  })

  return { stop: () => { clearTimeout(staleTimer) } }
}

function seconds (ms: number): number {
  return Math.round(ms / 100) / 10
}
