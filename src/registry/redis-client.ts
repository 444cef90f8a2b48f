/**
 * The gateway's Redis connection and its health. Fail closed and fail fast:
 * bounded command and connect timeouts, no offline queue, no retry of a command
 * that was in flight when the connection dropped. `RedisHealth` is what
 * readiness and the stale window are judged by.
 */
import { Redis } from 'ioredis'
import type { Config } from '../config/schema.js'

/** Resolves once a Redis at `url` answers PING (for starting one: the demo, the benchmark). */
export async function waitForRedis (url: string, opts: { attempts?: number, signal?: AbortSignal } = {}): Promise<void> {
  for (let i = 0; i < (opts.attempts ?? 100); i++) {
    opts.signal?.throwIfAborted()
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null })
    probe.on('error', () => {})
    try {
      await probe.connect()
      await probe.ping()
      return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 100))
    } finally {
      probe.disconnect()
    }
  }
  throw new Error(`${url} never answered PING`)
}

export function createRedis (cfg: Config['redis'], opts: { queueWhileConnecting?: boolean } = {}): Redis {
  return new Redis(cfg.url, {
    connectionName: 'keygate',
    commandTimeout: cfg.command_timeout_ms,
    connectTimeout: cfg.connect_timeout_ms,
    // The gateway answers 503 at once rather than queueing; the CLI may wait for the first connect.
    enableOfflineQueue: opts.queueWhileConnecting === true,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    enableReadyCheck: true,
    retryStrategy: (times) => Math.min(50 * 2 ** Math.min(times, 10), 1000)
  })
}

/**
 * Up while Redis answers. `lastOkAt` is when Redis last answered anything (a probe or
 * a registry read): the latest moment the cache is known to agree with Redis, which
 * is what the stale window is measured from.
 */
export class RedisHealth {
  up = false
  lastOkAt = Number.NEGATIVE_INFINITY
  private timer: NodeJS.Timeout | undefined

  constructor (private readonly redis: Redis, private readonly now: () => number = Date.now) {
    redis.on('ready', () => { this.probe() })
    redis.on('close', () => { this.markDown() })
    // ioredis logs unhandled 'error' events itself; the state change is what matters here.
    redis.on('error', () => { this.markDown() })
  }

  /** Ping every `intervalMs` so that a hung server (SIGSTOP) is noticed without traffic. */
  start (intervalMs = 1000): void {
    this.probe()
    this.timer = setInterval(() => { this.probe() }, intervalMs)
    this.timer.unref()
  }

  stop (): void {
    if (this.timer !== undefined) clearInterval(this.timer)
  }

  markUp (): void {
    this.up = true
    this.lastOkAt = this.now()
  }

  markDown (): void {
    this.up = false
  }

  private probe (): void {
    if (this.redis.status !== 'ready') {
      this.markDown()
      return
    }
    this.redis.ping().then(() => { this.markUp() }, () => { this.markDown() })
  }
}
