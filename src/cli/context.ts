/**
 * What every registry command needs: the same configuration and environment as
 * the gateway, a Redis connection that waits for its first connect, the admin
 * actions (the command line acts as `keygate:admin`, recorded as `cli:<os user>`),
 * and the shared argument parsers.
 */
import { existsSync } from 'node:fs'
import { userInfo } from 'node:os'
import { InvalidArgumentError } from 'commander'
import { configFile, DEFAULT_CONFIG_FILE, loadConfig, parseConfig } from '../config/load.js'
import { parseDuration } from '../config/duration.js'
import { parseRateLimit, RATE_LIMIT_HELP } from '../config/rate-limit.js'
import type { Config } from '../config/schema.js'
import { adminActions, adminWing, type AdminActions } from '../admin/actions/index.js'
import { FULL_ADMIN } from '../admin/model/principal.js'
import { createRedis, type RegistryClient } from '../registry/redis-client.js'

/** A bad usage found after parsing (exit status 2). */
export class UsageError extends Error {
  override readonly name = 'UsageError'
}

/** Redis did not answer a command's reads (exit status 1, like any failed operation). */
export class RedisUnreachable extends Error {
  override readonly name = 'RedisUnreachable'
}

/** commander argument parser for `30s`, `15m`, `24h`, `90d`. */
export function duration (value: string): number {
  const ms = parseDuration(value)
  if (ms === undefined || ms === 0) throw new InvalidArgumentError('expected a duration like 30s, 15m, 24h or 90d')
  return ms
}

/** The config file when there is one; the defaults (plus environment) when the default file is absent. */
export function cliConfig (env: NodeJS.ProcessEnv = process.env): Config {
  const file = configFile(env)
  if (file === DEFAULT_CONFIG_FILE && !existsSync(file)) {
    return parseConfig(
      '{}',
      env,
      '(defaults)',
      { forServing: false }
    )
  }
  return loadConfig(file, env, { forServing: false })
}

/** commander argument parser for `<count>/<period>` (`100/1s`, `5000/1h`). */
export function rateLimit (value: string): string {
  if (parseRateLimit(value) === undefined) throw new InvalidArgumentError(`expected ${RATE_LIMIT_HELP}`)
  return value
}

/** The same, or `none` (the limit is removed: see `limitOrNull`). */
export function rateLimitOrNone (value: string): string {
  return value === 'none' ? value : rateLimit(value)
}

/** `none` -> null (remove the limit); not given -> undefined (keep it). */
export function limitOrNull (value: string | undefined): string | null | undefined {
  return value === 'none' ? null : value
}

export interface RegistryContext {
  config: Config
  /** the connection (`keygate check` decides a request on it, as the gateway would) */
  redis: RegistryClient
  /** every admin read and write, as the admin API makes them (src/admin/actions/), as `keygate:admin` */
  actions: AdminActions
}

export async function withRegistry<T> (fn: (ctx: RegistryContext) => Promise<T>): Promise<T> {
  const config = cliConfig()
  const redis = createRedis(config.redis, { queueWhileConnecting: true })
  redis.on('error', () => {}) // reported through the failed command instead
  // (the changes made here are webhook events like any other: their audit entries, src/webhooks/follow.ts)
  try {
    const actions = adminActions(adminWing(config, redis), FULL_ADMIN, `cli:${safeUser()}`)
    return await fn({ config, redis, actions })
  } finally {
    redis.disconnect()
  }
}

function safeUser (): string {
  try {
    return userInfo().username
  } catch {
    return 'unknown'
  }
}
