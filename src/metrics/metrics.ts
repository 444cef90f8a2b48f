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
 * the registry in `collect` callbacks when /metrics is scraped. One module per group:
 * requests, the auth decision, upstreams, Redis, admin sign-in, the cache, usage counting. Label values come from
 * fixed vocabularies or from the configuration (rule patterns, upstream names), never
 * from a request: no path, no key id, no query string.
 */
import { collectDefaultMetrics, Registry } from 'prom-client'
import type { LogSinkStats } from '../logger.js'
import { adminSignInMetrics, type AdminSignInMeter } from './admin-metrics.js'
import { authMetrics, type AuthMeter } from './auth-metrics.js'
import { shadowMetrics, type ShadowMeter } from './shadow-metrics.js'
import { cacheMetrics, type CacheStats } from './cache-metrics.js'
import { rateLimitMetrics, type RateLimitMeter } from './ratelimit-metrics.js'
import { quotaMetrics, type QuotaMeterMetrics } from './quota-metrics.js'
import { redisMetrics, type RedisMeter, type RedisState } from './redis-metrics.js'
import { registrar } from './registrar.js'
import { requestMetrics, type RequestMeter } from './request-metrics.js'
import { upstreamMetrics, type UpstreamMeter } from './upstream-metrics.js'
import { usageMetrics, type UsageMeter } from './usage-metrics.js'
import { webSocketMetrics, type WebSocketMeter } from './websocket-metrics.js'
import { VERSION } from '../version.js'

export type {
  AdminSignInMeter, AuthMeter, CacheStats, QuotaMeterMetrics, RateLimitMeter, RedisMeter, RedisState, RequestMeter,
  UpstreamMeter, UsageMeter, WebSocketMeter
}

export interface MetricsOptions extends ScrapeSources {
  /** the configured rules, in order: `rule` label `<METHOD> <path pattern>` */
  rules: ReadonlyArray<{ method: string, path: string }>
  /** the configured upstream names: `upstream` label */
  upstreams: readonly string[]
  /** each upstream with targets: their origins, in order (`target` label) */
  upstreamTargets?: Readonly<Record<string, readonly string[]>>
  redis: RedisState
  /**
   * what the log could not write (src/logger.ts's live counters, read at scrape time); without it the
   * `keygate_log_*` metrics are not exported
   */
  logStats?: Readonly<LogSinkStats> | undefined
  /** prom-client's default process and Node.js metrics, unprefixed (default true) */
  defaultMetrics?: boolean
  now?: () => number
}

/** What the metrics read at scrape time from parts built after them (app.ts hands them over once built). */
export interface ScrapeSources {
  /** the cache's counters; without it the `keygate_cache_*` metrics are not exported */
  cacheStats?: () => CacheStats
  /** rate-limit buckets this process holds blocked (src/ratelimit/blocked.ts) */
  rateLimitBlocked?: () => number
  /** distinct keys the usage counter holds, not yet written (src/usage/counter.ts) */
  usageHeld?: () => number
}

export interface Metrics {
  readonly registry: Registry
  /** the parts read at scrape time, once they are built; the metrics of a source not given read 0 or are absent */
  observe: (sources: ScrapeSources) => void
  /** the data plane's responses (`mode="proxy"`) */
  readonly requests: RequestMeter
  /** the authorizer listener's responses (`mode="authz"`) */
  readonly decisions: RequestMeter
  /** the data plane's WebSocket upgrades (`mode="websocket"`) */
  readonly upgrades: RequestMeter
  /** open WebSocket connections and why they ended */
  readonly webSockets: WebSocketMeter
  readonly adminSignIn: AdminSignInMeter
  readonly auth: AuthMeter
  /** the shadow rules' differences from the live rules */
  readonly shadow: ShadowMeter
  readonly redis: RedisMeter
  readonly rateLimit: RateLimitMeter
  /** metered keys' outcomes (src/quota/) */
  readonly quota: QuotaMeterMetrics
  /** the per-key usage counter's writes and losses */
  readonly usage: UsageMeter
  upstream: (name: string) => UpstreamMeter
  /** an upstream's target states (1 up, 0 out), one byte per target, that its pool writes; undefined without targets */
  targetStates: (name: string) => Uint8Array | undefined
  /** label sets allocated so far; each once, the first time it is seen */
  labelSets: () => number
}

export function createMetrics (o: MetricsOptions): Metrics {
  const registry = new Registry()
  if (o.defaultMetrics !== false) collectDefaultMetrics({ register: registry })
  const r = registrar(registry)
  const requests = requestMetrics(r, o.rules)
  const auth = authMetrics(r)
  const shadow = shadowMetrics(r)
  const upstreams = upstreamMetrics(r, o.upstreams, o.upstreamTargets)
  const redis = redisMetrics(r, o.redis)
  const adminSignIn = adminSignInMetrics(r)
  let rateLimitBlocked = (): number => 0
  let usageHeld = (): number => 0
  const rateLimit = rateLimitMetrics(r, () => rateLimitBlocked())
  const quota = quotaMetrics(r)
  const webSockets = webSocketMetrics(r)
  const usage = usageMetrics(r, () => usageHeld())
  let cacheObserved = false
  const observe = (sources: ScrapeSources): void => {
    if (sources.rateLimitBlocked !== undefined) rateLimitBlocked = sources.rateLimitBlocked
    if (sources.usageHeld !== undefined) usageHeld = sources.usageHeld
    if (sources.cacheStats !== undefined && !cacheObserved) {
      cacheObserved = true
      cacheMetrics(r, sources.cacheStats, o.now ?? Date.now)
    }
  }
  observe(o)
  r.gauge({
    name: 'keygate_build_info',
    help: 'Always 1: the running keygate\'s version and the Node.js version it runs on, as labels.',
    labelNames: ['version', 'node'],
    aggregator: 'max',
    collect () { this.set({ version: VERSION, node: process.versions.node }, 1) }
  })

  // ---- the log's destination -----------------------------------------------------------
  const logStats = o.logStats
  if (logStats !== undefined) {
    r.total('keygate_log_write_errors_total',
      'Failed writes of log lines to stdout (EPIPE: nothing reads it any more; EIO; ENOSPC). ' +
        'The gateway keeps serving.',
      () => logStats.writeErrors)
    r.total('keygate_log_lines_dropped_total',
      'Log lines dropped: 16 MiB of lines were already waiting for a stalled stdout, or a write had failed ' +
        '(the log ends at its first failed write). The gateway keeps serving.',
      () => logStats.droppedLines)
  }

  return {
    registry,
    observe,
    requests: requests.meters.proxy,
    decisions: requests.meters.authz,
    upgrades: requests.meters.websocket,
    webSockets,
    adminSignIn,
    auth: auth.meter,
    shadow,
    redis: redis.meter,
    rateLimit,
    quota,
    usage,
    upstream (name) {
      const meter = upstreams.meters.get(name)
      if (meter === undefined) throw new Error(`metrics: unknown upstream ${name}`)
      return meter
    },
    targetStates: (name) => upstreams.states.get(name),
    labelSets: () => requests.labelSets() + auth.labelSets() + upstreams.labelSets() + redis.labelSets()
  }
}
