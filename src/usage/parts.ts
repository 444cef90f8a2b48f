/**
 * What the gateway writes about keys' use, off the request path, each on the usage
 * connection but the last-used times (on the registry's): the per-key counts
 * (counter.ts), the per-key request log (key-requests.ts), what shadow restrictions
 * would refuse (shadow-refusals.ts), and the last-used times (last-used.ts). Each is a
 * background part (src/lifecycle.ts) whose stop writes what it holds, registered after
 * the connection it writes on, so a graceful stop drains it before the connection closes.
 */
import type { Logger } from 'pino'
import { parseDuration } from '../config/duration.js'
import { redactedUrl } from '../config/redis-url.js'
import type { Config } from '../config/schema.js'
import type { Lifecycle } from '../lifecycle.js'
import { requestLogMetrics } from '../metrics/events-metrics.js'
import type { Metrics } from '../metrics/metrics.js'
import { keyPrefixesOf } from '../registry/key-format.js'
import { createRedis, type RegistryClient } from '../registry/redis-client.js'
import type { RedisKeys } from '../registry/redis-keys.js'
import { UsageCounter } from './counter.js'
import { KeyRequests, keyRequestsOptions } from './key-requests.js'
import { UsageRecorder } from './last-used.js'
import { ShadowRefusals } from './shadow-refusals.js'

export interface UsageParts {
  /** each key's request counts, written every usage.flush_ms */
  counter: UsageCounter
  /** each key's last decisions, written every request_log.flush_ms */
  requests: KeyRequests
  /** what keys' shadow restrictions would refuse, held until written */
  shadowRefusals: ShadowRefusals
  /** each key's last use */
  usage: UsageRecorder
}

export interface UsagePartsOptions {
  config: Config
  /** the registry's connection: the last-used times */
  redis: RegistryClient
  keys: RedisKeys
  logger: Logger
  metrics: Metrics
  lifecycle: Lifecycle
}

export function createUsageParts ({ config, redis, keys, logger, metrics, lifecycle }: UsagePartsOptions): UsageParts {
  // (its own connection: a flush, up to a few hundred script calls, never queues ahead
  // of a request's lookup on the registry's connection)
  const usageRedis = createRedis(config.redis)
  usageRedis.on('error', () => { metrics.redis.connectionError() })
  lifecycle.add({ name: 'usage connection', stop: () => { usageRedis.disconnect() } })
  const redisName = redactedUrl(config.redis.url)
  const counter = new UsageCounter(usageRedis, keys, {
    enabled: config.usage.enabled,
    flushMs: config.usage.flush_ms,
    retentionMs: parseDuration(config.usage.retention) ?? 90 * 86_400_000,
    maxKeys: config.usage.max_keys,
    // once an outage, its cause in words: not the client library's message (it names the library's own
    // options), nor the error's command (ioredis keeps its arguments, key ids among them)
    onError: (err) => {
      const cause = usageRedis.status === 'ready' ? (err as Error).message : 'Redis unreachable'
      logger.warn({ redis: redisName, cause }, 'usage: counts cannot be written and are dropped')
    },
    onRecovered: () => { logger.info('usage: counts are written again') },
    meter: metrics.usage
  })
  // the last counts: a graceful stop loses none
  lifecycle.add({ name: 'usage counts', stop: async () => { await counter.stop() } })
  const requests = new KeyRequests(usageRedis, keys, {
    ...keyRequestsOptions(config.request_log),
    keyPrefix: keyPrefixesOf(config.keys),
    onError: () => { logger.warn({ redis: redisName }, 'request log: decisions cannot be written') }
  })
  lifecycle.add({ name: 'request log', stop: async () => { await requests.stop() } })
  requestLogMetrics(metrics.registry, () => requests)
  const usage = new UsageRecorder(redis, keys.usage, { keys: config.cache.max_entries })
  lifecycle.add({ name: 'last used', stop: async () => { await usage.stop() } })
  const shadowRefusals = new ShadowRefusals(usageRedis, keys, {
    flushMs: config.usage.flush_ms,
    onError: () => { logger.warn('shadow restrictions: what they would refuse cannot be written and is dropped') }
  })
  lifecycle.add({ name: 'shadow refusals', stop: async () => { await shadowRefusals.stop() } })
  return { counter, requests, shadowRefusals, usage }
}
