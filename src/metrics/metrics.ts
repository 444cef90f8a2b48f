/**
 * Every metric keygate exports, defined in one place with its help text; served by
 * the admin plane at GET /metrics (src/admin/metrics-route.ts). Reference, with
 * labels and example queries: docs/metrics.md.
 *
 * One Registry per process, never prom-client's global one: with N worker processes
 * (node:cluster) each has its own registry, which the primary can aggregate with
 * AggregatorRegistry (workers call `AggregatorRegistry.setRegistries`). Counters and
 * histograms sum; each gauge names the aggregator it needs.
 *
 * The request path only adds to plain numbers (series.ts); everything is copied into
 * the registry in `collect` callbacks when /metrics is scraped. Label values come from
 * fixed vocabularies or from the configuration (rule patterns, upstream names), never
 * from a request: no path, no key id, no query string.
 */
import {
  collectDefaultMetrics, Counter, Gauge, Registry,
  type Aggregator, type CounterConfiguration, type GaugeConfiguration, type Metric
} from 'prom-client'
import type { Reason } from '../errors.js'
import {
  REDIS_LOOKUP_ERROR_KINDS, redisLookupErrorKind, UPSTREAM_ERROR_KINDS, upstreamErrorKind
} from './classify.js'
import type { LogSinkStats } from '../logger.js'
import { CountTable, HistogramTable, type Labels } from './series.js'

/** What the cache exposes to the metrics (plain counters, read at scrape time). */
export interface CacheStats {
  hits: number            // decisions served from the cache
  misses: number          // decisions that needed a Redis round trip
  evictions: number       // entries evicted by the size bound
  invalidations: number   // invalidation messages applied (push invalidation)
  entries: number         // entries now held
  trackingUp: boolean     // the invalidation (tracking) connection is established
  trackingSince: number   // epoch ms when it was (re-)established, 0 when down
}

/** What the metrics read of Redis health (RedisHealth in src/registry/redis-client.ts). */
export interface RedisState {
  readonly up: boolean
  /** epoch ms of Redis's last answer; -Infinity if never */
  readonly lastOkAt: number
}

export interface MetricsOptions {
  /** the configured rules, in order: `rule` label `<METHOD> <path pattern>` */
  rules: ReadonlyArray<{ method: string, path: string }>
  /** the configured upstream names: `upstream` label */
  upstreams: readonly string[]
  redis: RedisState
  /** the cache's counters; without it the `keygate_cache_*` metrics are not exported */
  cacheStats?: () => CacheStats
  /** what the log could not write (src/logger.ts's live counters, read at scrape time); without it the `keygate_log_*` metrics are not exported */
  logStats?: Readonly<LogSinkStats> | undefined
  /** prom-client's default process and Node.js metrics, unprefixed (default true) */
  defaultMetrics?: boolean
  now?: () => number
}

/** Recorded by the last stage (request-log.ts), once per data-plane response. */
export interface RequestMeter {
  /** `rule`: the matched rule's index, undefined when none matched; `ms`: the whole request */
  response: (rule: number | undefined, status: number, reason: Reason, ms: number) => void
  /** a request refused by node's HTTP parser before fastify saw it (431, 400, 408): counted, not timed */
  refused: (status: number, reason: Reason) => void
}

/** Recorded by the gate (gate.ts). */
export interface AuthMeter {
  /** a decision whose records were all cached: synchronous, counted, not timed */
  fromCache: () => void
  /** a decision that waited for Redis: `ms` from the lookup to the records (or the failure) */
  fromRedis: (ms: number) => void
}

/** Recorded by the proxy (proxy.ts), one per upstream. */
export interface UpstreamMeter {
  /** `ms` from sending the request upstream to its response headers */
  response: (ms: number) => void
  /** an upstream failure before any response (counted by kind, see classify.ts) */
  error: (err: unknown) => void
}

export interface RedisMeter {
  /** the connection reported an error (ioredis 'error' event) */
  connectionError: () => void
  /** a registry lookup failed */
  lookupError: (err: unknown) => void
}

/** Recorded by the admin API's sign-in hook (src/admin/api/index.ts). */
export interface AdminSignInMeter {
  /** a sign-in refused with 401 (a credential that did not sign in) */
  failure: () => void
  /** a request refused with 429: its peer had too many failed sign-ins */
  limited: () => void
}

export interface Metrics {
  readonly registry: Registry
  readonly requests: RequestMeter
  readonly adminSignIn: AdminSignInMeter
  readonly auth: AuthMeter
  readonly redis: RedisMeter
  upstream: (name: string) => UpstreamMeter
  /** label sets allocated so far; each once, the first time it is seen */
  labelSets: () => number
}

/** Buckets, in seconds. A gateway denial takes ~0.1 ms, a proxied request the upstream's time. */
const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
/** A Redis round trip: ~0.1 ms on a LAN; `redis.command_timeout_ms` (default 0.5 s) bounds it. */
const AUTH_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]

/** The reasons of contract section 7 plus src/errors.ts's extras (typed: none missing, none extra). */
const REASON_SET: Record<Reason, true> = {
  allowed: true,
  missing_credential: true,
  malformed_credential: true,
  bad_checksum: true,
  unknown_key: true,
  secret_mismatch: true,
  key_revoked: true,
  key_expired: true,
  user_missing: true,
  user_deactivated: true,
  org_mismatch: true,
  no_rule: true,
  missing_permission: true,
  registry_unavailable: true,
  bad_path: true,
  no_route: true,
  upstream_error: true,
  upstream_timeout: true,
  invalid_record: true,
  bad_request: true,
  body_too_large: true,
  header_too_large: true,
  expectation_failed: true,
  request_timeout: true,
  internal_error: true,
  cors_preflight: true,
  cors_refused: true,
  unknown_key_limited: true
}
export const REASONS = Object.keys(REASON_SET) as Reason[]
const REASON_INDEX = new Map<string, number>(REASONS.map((r, i) => [r, i]))
const INTERNAL_ERROR = REASON_INDEX.get('internal_error') as number

export function createMetrics (o: MetricsOptions): Metrics {
  const registry = new Registry()
  const now = o.now ?? Date.now
  if (o.defaultMetrics !== false) collectDefaultMetrics({ register: registry })
  // (`registers: []`: prom-client would otherwise also register with its global registry)
  const counter = (c: CounterConfiguration<string>): void => { registry.registerMetric(new Counter({ ...c, registers: [] })) }
  const gauge = (c: GaugeConfiguration<string>): void => { registry.registerMetric(new Gauge({ ...c, registers: [] })) }
  const histogram = (h: HistogramTable): HistogramTable => { registry.registerMetric(h as unknown as Metric); return h }

  // label values by index: index 0 is "none" (no rule matched, or none was evaluated)
  const ruleLabels = ['none', ...o.rules.map((r) => `${r.method} ${r.path}`)]
  const ruleLabel = (i: number): string => ruleLabels[i] ?? 'none'
  const nReasons = REASONS.length

  // ---- requests (data plane) ----------------------------------------------------------
  // slot = ((rule + 1) * 1000 + status) * nReasons + reason
  const requests = new CountTable((slot) => {
    const reason = slot % nReasons
    const rest = (slot - reason) / nReasons
    const status = rest % 1000
    return { rule: ruleLabel((rest - status) / 1000), status: String(status), reason: REASONS[reason] as string }
  })
  counter({
    name: 'keygate_requests_total',
    help: 'Data-plane responses, by matched rule ("none" when no rule matched or none was evaluated), HTTP status and decision reason.',
    labelNames: ['rule', 'status', 'reason'],
    collect () { requests.exportTo(this) }
  })

  // slot = (rule + 1) * 10 + status / 100
  const requestDuration = histogram(new HistogramTable(
    'keygate_request_duration_seconds',
    'Whole data-plane requests, from fastify receiving the request to the last byte of the response, by rule and status class.',
    REQUEST_BUCKETS,
    (slot) => ({ rule: ruleLabel(Math.floor(slot / 10)), status_class: `${slot % 10}xx` })
  ))

  const requestMeter: RequestMeter = {
    response (rule, status, reason, ms) {
      const r = rule === undefined ? 0 : rule + 1
      const s = status >= 100 && status <= 999 ? status : 0
      requests.add(((r * 1000) + s) * nReasons + (REASON_INDEX.get(reason) ?? INTERNAL_ERROR))
      requestDuration.observe(r * 10 + ((s / 100) | 0), ms)
    },
    refused (status, reason) {
      requests.add(status * nReasons + (REASON_INDEX.get(reason) ?? INTERNAL_ERROR))
    }
  }

  // ---- the auth decision ---------------------------------------------------------------
  let decidedFromCache = 0
  let decidedFromRedis = 0
  const fromCacheLabels: Labels = { source: 'cache' }
  const fromRedisLabels: Labels = { source: 'redis' }
  counter({
    name: 'keygate_auth_decisions_total',
    help: 'Authentication decisions that needed records, by where the records came from: "cache" (synchronous) or "redis" (one round trip, timed in keygate_auth_decision_duration_seconds).',
    labelNames: ['source'],
    collect () {
      this.reset()
      this.inc(fromCacheLabels, decidedFromCache)
      this.inc(fromRedisLabels, decidedFromRedis)
    }
  })
  const authDuration = histogram(new HistogramTable(
    'keygate_auth_decision_duration_seconds',
    'Authentication decisions that waited for Redis: from the registry lookup to its records (or its failure). Decisions from the cache are counted, not timed.',
    AUTH_BUCKETS,
    () => ({})
  ))
  authDuration.open(0)
  const authMeter: AuthMeter = {
    fromCache () { decidedFromCache++ },
    fromRedis (ms) {
      decidedFromRedis++
      authDuration.observe(0, ms)
    }
  }

  // ---- upstreams -----------------------------------------------------------------------
  const upstreamNames = [...new Set(o.upstreams)]
  const upstreamDuration = histogram(new HistogramTable(
    'keygate_upstream_duration_seconds',
    'Upstream requests, from sending the request to the upstream\'s response headers, by upstream.',
    REQUEST_BUCKETS,
    (slot) => ({ upstream: upstreamNames[slot] as string })
  ))
  // slot = upstream * kinds + kind
  const nKinds = UPSTREAM_ERROR_KINDS.length
  const upstreamErrors = new CountTable((slot) => ({
    upstream: upstreamNames[Math.floor(slot / nKinds)] as string,
    kind: UPSTREAM_ERROR_KINDS[slot % nKinds] as string
  }))
  counter({
    name: 'keygate_upstream_errors_total',
    help: 'Upstream requests that failed before a response, by upstream and kind: refused, reset, timeout (connect or response headers; the 504s), other.',
    labelNames: ['upstream', 'kind'],
    collect () { upstreamErrors.exportTo(this) }
  })
  const upstreamMeters = new Map<string, UpstreamMeter>()
  upstreamNames.forEach((name, u) => {
    upstreamDuration.open(u)
    for (let k = 0; k < nKinds; k++) upstreamErrors.add(u * nKinds + k, 0)
    upstreamMeters.set(name, {
      response (ms) { upstreamDuration.observe(u, ms) },
      error (err) { upstreamErrors.add(u * nKinds + UPSTREAM_ERROR_KINDS.indexOf(upstreamErrorKind(err))) }
    })
  })

  // ---- Redis ---------------------------------------------------------------------------
  gauge({
    name: 'keygate_redis_up',
    help: 'Whether Redis answers (1) or not (0): what /readyz reports; probed every second.',
    aggregator: 'min',
    collect () { this.set(o.redis.up ? 1 : 0) }
  })
  gauge({
    name: 'keygate_redis_last_ok_timestamp_seconds',
    help: 'When Redis last answered (Unix time; 0 if never). The stale window (cache.stale_if_error_s) is measured from it.',
    aggregator: 'min',
    collect () { this.set(Number.isFinite(o.redis.lastOkAt) ? o.redis.lastOkAt / 1000 : 0) }
  })
  let connectionErrors = 0
  counter({
    name: 'keygate_redis_connection_errors_total',
    help: 'Errors reported by the gateway\'s Redis connection (refused, reset, DNS, TLS, authentication), about one per failed (re)connect attempt.',
    collect () {
      this.reset()
      this.inc(connectionErrors)
    }
  })
  const lookupErrors = new CountTable((slot) => ({ kind: REDIS_LOOKUP_ERROR_KINDS[slot] as string }))
  for (let k = 0; k < REDIS_LOOKUP_ERROR_KINDS.length; k++) lookupErrors.add(k, 0)
  counter({
    name: 'keygate_redis_lookup_errors_total',
    help: 'Registry lookups that failed, by kind: timeout (redis.command_timeout_ms), connection (not sent, or the connection was lost), reply (Redis answered with an error, e.g. WRONGTYPE).',
    labelNames: ['kind'],
    collect () { lookupErrors.exportTo(this) }
  })
  const redisMeter: RedisMeter = {
    connectionError () { connectionErrors++ },
    lookupError (err) { lookupErrors.add(REDIS_LOOKUP_ERROR_KINDS.indexOf(redisLookupErrorKind(err))) }
  }

  // ---- admin sign-in ---------------------------------------------------------------------
  let signInFailures = 0
  let signInLimited = 0
  counter({
    name: 'keygate_admin_sign_in_failures_total',
    help: 'Admin API sign-ins refused with 401 (a credential was sent, and it did not sign in); they count towards admin.sign_in_failures_per_minute.',
    collect () { this.reset(); this.inc(signInFailures) }
  })
  counter({
    name: 'keygate_admin_sign_in_limited_total',
    help: 'Admin API requests refused with 429 before any credential was read: their peer address had admin.sign_in_failures_per_minute failed sign-ins within the minute.',
    collect () { this.reset(); this.inc(signInLimited) }
  })
  const adminSignInMeter: AdminSignInMeter = {
    failure () { signInFailures++ },
    limited () { signInLimited++ }
  }

  // ---- the cache (read from its own counters at scrape time) ---------------------------
  const stats = o.cacheStats
  if (stats !== undefined) {
    const cacheCounter = (name: string, help: string, read: (s: CacheStats) => number): void => {
      counter({ name, help, collect () { this.reset(); this.inc(read(stats())) } })
    }
    const cacheGauge = (name: string, help: string, aggregator: Aggregator, read: (s: CacheStats) => number): void => {
      gauge({ name, help, aggregator, collect () { this.set(read(stats())) } })
    }
    cacheCounter('keygate_cache_hits_total', 'Decisions served from the in-process cache.', (s) => s.hits)
    cacheCounter('keygate_cache_misses_total', 'Decisions that needed a Redis round trip.', (s) => s.misses)
    cacheCounter('keygate_cache_evictions_total', 'Cache entries evicted by the size bounds (cache.max_entries, cache.negative_max_entries).', (s) => s.evictions)
    cacheCounter('keygate_cache_invalidations_total', 'Invalidation messages applied to the cache (push invalidation).', (s) => s.invalidations)
    cacheGauge('keygate_cache_entries', 'Entries now held by the cache (key, user and role records, and negative entries).', 'sum', (s) => s.entries)
    cacheGauge('keygate_cache_tracking_up', 'Whether the invalidation (tracking) connection is established (1) or not (0).', 'min', (s) => s.trackingUp ? 1 : 0)
    cacheGauge('keygate_cache_tracking_connection_age_seconds',
      'Seconds since the invalidation (tracking) connection was (re-)established; 0 while it is down.', 'min',
      (s) => s.trackingUp && s.trackingSince > 0 ? Math.max(0, now() - s.trackingSince) / 1000 : 0)
  }

  // ---- the log's destination -----------------------------------------------------------
  const logStats = o.logStats
  if (logStats !== undefined) {
    counter({
      name: 'keygate_log_write_errors_total',
      help: 'Failed writes of log lines to stdout (EPIPE: nothing reads it any more; EIO; ENOSPC). The gateway keeps serving.',
      collect () { this.reset(); this.inc(logStats.writeErrors) }
    })
    counter({
      name: 'keygate_log_lines_dropped_total',
      help: 'Log lines dropped: 16 MiB of lines were already waiting for a stalled stdout, or a write had failed (the log ends at its first failed write). The gateway keeps serving.',
      collect () { this.reset(); this.inc(logStats.droppedLines) }
    })
  }

  return {
    registry,
    requests: requestMeter,
    adminSignIn: adminSignInMeter,
    auth: authMeter,
    redis: redisMeter,
    upstream (name) {
      const meter = upstreamMeters.get(name)
      if (meter === undefined) throw new Error(`metrics: unknown upstream ${name}`)
      return meter
    },
    labelSets: () => requests.size + requestDuration.size + authDuration.size + upstreamDuration.size + upstreamErrors.size + lookupErrors.size
  }
}
