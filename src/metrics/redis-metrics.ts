/** Redis: whether it answers, when it last did, connection errors, failed lookups by kind. */
import { REDIS_LOOKUP_ERROR_KINDS, redisLookupErrorKind } from './classify.js'
import type { Registrar } from './registrar.js'
import { CountTable } from './series.js'

/** What the metrics read of Redis health (RedisHealth in src/registry/redis-client.ts). */
export interface RedisState {
  readonly up: boolean
  /** epoch ms of Redis's last answer; -Infinity if never */
  readonly lastOkAt: number
}

export interface RedisMeter {
  /** the connection reported an error (ioredis 'error' event) */
  connectionError: () => void
  /** a registry lookup failed */
  lookupError: (err: unknown) => void
}

export function redisMetrics (r: Registrar, redis: RedisState): { meter: RedisMeter, labelSets: () => number } {
  r.level('keygate_redis_up',
    'Whether Redis answers (1) or not (0): what /readyz reports; probed every second.', 'min',
    () => redis.up ? 1 : 0)
  r.level('keygate_redis_last_ok_timestamp_seconds',
    'When Redis last answered (Unix time; 0 if never). The stale window (cache.stale_if_error_s) is measured from it.',
    'min',
    () => Number.isFinite(redis.lastOkAt) ? redis.lastOkAt / 1000 : 0)
  let connectionErrors = 0
  r.total('keygate_redis_connection_errors_total',
    'Errors reported by the gateway\'s Redis connection (refused, reset, DNS, TLS, authentication), about one per ' +
    'failed (re)connect attempt.',
    () => connectionErrors)
  const lookupErrors = new CountTable((slot) => ({ kind: REDIS_LOOKUP_ERROR_KINDS[slot] as string }))
  for (let k = 0; k < REDIS_LOOKUP_ERROR_KINDS.length; k++) lookupErrors.add(k, 0)
  r.counter({
    name: 'keygate_redis_lookup_errors_total',
    help: 'Registry lookups that failed, by kind: timeout (redis.command_timeout_ms), connection (not sent, or the ' +
      'connection was lost), reply (Redis answered with an error, e.g. WRONGTYPE).',
    labelNames: ['kind'],
    collect () { lookupErrors.exportTo(this) }
  })
  const meter: RedisMeter = {
    connectionError () { connectionErrors++ },
    lookupError (err) { lookupErrors.add(REDIS_LOOKUP_ERROR_KINDS.indexOf(redisLookupErrorKind(err))) }
  }
  return { meter, labelSets: () => lookupErrors.size }
}
