/**
 * A Redis outage, said plainly in the log, once each: an `error` line when Redis stops
 * answering (its URL, passwords redacted), an `error` line when the stale window
 * (`cache.stale_if_error_s`, counted from the cache's last agreement with Redis) ends and every request that
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
  /**
   * the last moment the cache agreed with Redis (epoch ms), from which the stale window runs
   * (src/cache/create-cache.ts); default the connection's last answer
   */
  agreedAt?: () => number
  now?: () => number
}

export interface OutageLog {
  /** stop the stale-window timer (at close) */
  stop: () => void
}

export function logRedisOutages (health: RedisHealth, logger: Logger, o: OutageLogOptions): OutageLog {
  const now = o.now ?? Date.now
  const agreedAt = o.agreedAt ?? (() => health.lastOkAt)
  const redis = redactedUrl(o.url)
  const staleS = o.staleIfErrorMs / 1000
  let downSince: number | undefined
  let staleTimer: NodeJS.Timeout | undefined

  const staleEnded = (): void => {
    staleTimer = undefined
    if (health.up || downSince === undefined) return
    // an agreement answered after the outage began moves the window's end
    const left = agreedAt() + o.staleIfErrorMs - now()
    if (left > 0) {
      staleTimer = setTimeout(staleEnded, left)
      staleTimer.unref()
      return
    }
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
      staleTimer = setTimeout(staleEnded, Math.max(0, agreedAt() + o.staleIfErrorMs - now()))
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
