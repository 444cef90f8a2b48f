/**
 * The registry's Redis connection, on any of the three topologies `redis.url` names
 * (redis-url.ts: standalone, Sentinel, Cluster), and its health. Fail closed and
 * fail fast, on every topology: bounded command and connect timeouts, no offline
 * queue for the gateway, no retry of a command that was in flight when a
 * connection dropped, reconnects that back off to at most 1 s and never give up
 * (not even where ioredis itself would: connection-guards.ts).
 * `RedisHealth` is what readiness and the stale window are judged by.
 * Topologies, failover and the key-slot strategy: docs/topologies.md.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis'
import type { Config } from '../config/schema.js'
import { parseRedisUrl, type HostPort, type RedisTarget } from '../config/redis-url.js'
import { isPersistent, kept } from './connection-guards.js'

/** A registry client: one Redis (standalone, or the master a Sentinel names) or a Cluster. */
export type RegistryClient = Redis | Cluster

export function isCluster (client: RegistryClient): client is Cluster {
  return client instanceof Cluster
}

/** The nodes a SCAN visits, in a stable order: the client, or a Cluster's primaries by address. */
export function primaries (client: RegistryClient): Redis[] {
  if (!isCluster(client)) return [client]
  const address = (r: Redis): string => `${r.options.host ?? ''}:${r.options.port ?? 0}`
  return client.nodes('master').sort((a, b) => address(a).localeCompare(address(b)))
}

/** Resolves once a Redis at `url` answers PING (for starting one: the demo, the benchmark). */
export async function waitForRedis (
  url: string, opts: { attempts?: number, signal?: AbortSignal } = {}
): Promise<void> {
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

export interface ClientOptions {
  /**
   * Queue commands until the first connect (the CLI). The gateway never queues: a
   * request answers 503 at once rather than wait. A queueing client gives up after a
   * few rounds over every address, so that a command fails instead of hanging.
   */
  queueWhileConnecting?: boolean
}

/** What createRedis builds, without connecting: one Redis and its options, or a Cluster's seeds and options. */
export type ConnectionPlan =
  | { topology: 'standalone' | 'sentinel', options: RedisOptions }
  | { topology: 'cluster', nodes: HostPort[], options: ClusterOptions }

/** Reconnect delay: 100 ms doubling to 1 s, for ever. */
const backoff = (attempt: number): number => Math.min(50 * 2 ** Math.min(attempt, 10), 1000)
/** Rounds over every sentinel or cluster node before a queueing (CLI) client gives up. */
const QUEUEING_ROUNDS = 3

export function connectionPlan (cfg: Config['redis'], opts: ClientOptions = {}): ConnectionPlan {
  const target = parseRedisUrl(cfg.url)
  const queue = opts.queueWhileConnecting === true
  // Every connection, whatever the topology: one bounded attempt per command.
  const perConnection: RedisOptions = {
    ...credentials(target),
    connectionName: 'keygate',
    commandTimeout: cfg.command_timeout_ms,
    connectTimeout: cfg.connect_timeout_ms,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    enableReadyCheck: true
  }
  if (target.tls) perConnection.tls = {}

  if (target.topology === 'cluster') {
    return {
      topology: 'cluster',
      nodes: target.nodes,
      options: {
        redisOptions: perConnection,
        enableOfflineQueue: queue,
        enableReadyCheck: true,
        scaleReads: 'master',
        clusterRetryStrategy: (times) => queue && times > QUEUEING_ROUNDS ? null : backoff(times),
        // Redirections and retries (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, a node lost) are
        // bounded in number, and a command's own timeout runs from its first send.
        maxRedirections: Math.max(3, Math.ceil(cfg.command_timeout_ms / 100)),
        retryDelayOnMoved: 0,
        retryDelayOnFailover: 100,
        retryDelayOnClusterDown: 100,
        retryDelayOnTryAgain: 100,
        slotsRefreshTimeout: cfg.connect_timeout_ms,
        // learn of a failover or a moved slot without waiting for an error
        slotsRefreshInterval: 5000
      }
    }
  }

  const options: RedisOptions = {
    ...perConnection,
    db: target.db,
    enableOfflineQueue: queue,
    retryStrategy: backoff,
    // A write answered READONLY means this server was demoted (a failover behind a DNS
    // name or a Sentinel): reconnecting finds the current primary. Never resent.
    reconnectOnError: (err) => err.message.startsWith('READONLY') ? 1 : false
  }
  if (target.topology === 'standalone') {
    return { topology: 'standalone', options: { ...options, host: target.host, port: target.port } }
  }
  const sentinel: RedisOptions = {
    ...options,
    sentinels: target.sentinels,
    name: target.name,
    role: 'master',
    sentinelCommandTimeout: cfg.command_timeout_ms,
    // one round over the sentinels per attempt, then the backoff; a queueing client gives up
    sentinelRetryStrategy: (times) => queue && times > QUEUEING_ROUNDS ? null : backoff(times),
    // drop the connection as soon as a sentinel announces +switch-master, rather than
    // when the old master is gone or demoted
    failoverDetector: true
  }
  if (target.sentinelUsername !== undefined) sentinel.sentinelUsername = target.sentinelUsername
  if (target.sentinelPassword !== undefined) sentinel.sentinelPassword = target.sentinelPassword
  if (target.tls) {
    sentinel.enableTLSForSentinelMode = true
    sentinel.sentinelTLS = {}
  }
  return { topology: 'sentinel', options: sentinel }
}

/** The registry's client for `redis.url`: a Redis (standalone or Sentinel-managed) or a Cluster. */
export function createRedis (cfg: Config['redis'], opts: ClientOptions = {}): RegistryClient {
  const plan = connectionPlan(cfg, opts)
  if (plan.topology !== 'cluster') {
    // (a queueing client, the CLI's, gives up on purpose: a command fails rather than hangs)
    return kept(new Redis(plan.options), { persistent: opts.queueWhileConnecting !== true })
  }
  const cluster = new Cluster(plan.nodes, plan.options)
  // On a Cluster, health is judged on the slot the registry lives in (see RedisHealth).
  clusterProbeKeys.set(cluster, `${cfg.prefix}keys`)
  return cluster
}

/**
 * A client of its own to the same registry, for server-side state that must not be
 * shared with other callers (WATCH ... EXEC). On a single Redis: `duplicate()` (on
 * Sentinel, a connection that finds and follows the master itself). On a Cluster: a
 * Cluster of its own (its WATCH and MULTI land on the same node connection, the
 * registry's slot being one). `overrides` are per connection; `lazyConnect`,
 * `enableReadyCheck` and `retryStrategy` apply to a Cluster as a whole.
 *
 * Not for CLIENT TRACKING or SUBSCRIBE on a Cluster: a Cluster routes keyless
 * commands to any node (docs/topologies.md, push invalidation).
 */
export function duplicateClient (client: RegistryClient, overrides: RedisOptions = {}): RegistryClient {
  if (!isCluster(client)) {
    return kept(client.duplicate(overrides), { persistent: isPersistent(client) })
  }
  const { lazyConnect, enableReadyCheck, retryStrategy, ...perNode } = overrides
  const options: ClusterOptions = { redisOptions: { ...client.options.redisOptions, ...perNode } }
  if (lazyConnect !== undefined) options.lazyConnect = lazyConnect
  if (enableReadyCheck !== undefined) options.enableReadyCheck = enableReadyCheck
  if (retryStrategy !== undefined) options.clusterRetryStrategy = retryStrategy ?? (() => null)
  return client.duplicate([], options)
}

function credentials (t: RedisTarget): Pick<RedisOptions, 'username' | 'password'> {
  const c: Pick<RedisOptions, 'username' | 'password'> = {}
  if (t.username !== undefined) c.username = t.username
  if (t.password !== undefined) c.password = t.password
  return c
}

// ---- health ------------------------------------------------------------------

/** Cluster client -> a registry key: the probe reads it, so it lands on the registry's slot. */
const clusterProbeKeys = new WeakMap<Cluster, string>()

/**
 * Up while Redis answers. `lastOkAt` is when Redis last answered anything (a probe or
 * a registry read): the latest moment the cache is known to agree with Redis, which
 * is what the stale window is measured from.
 *
 * The probe is a PING on a single Redis (which a loading, stale-replica or
 * unauthenticated server refuses as it refuses reads), and on a Cluster an EXISTS of a
 * registry key, so that it is answered by the master of the registry's slot and fails
 * with CLUSTERDOWN as reads do (a PING would go to any node).
 */
export class RedisHealth {
  up = false
  lastOkAt = Number.NEGATIVE_INFINITY
  private timer: NodeJS.Timeout | undefined
  private readonly waiters = new Set<() => void>()
  private readonly watchers: Array<(up: boolean) => void> = []

  constructor (private readonly redis: RegistryClient, private readonly now: () => number = Date.now) {
    redis.on('ready', () => { this.probe() })
    redis.on('close', () => { this.markDown() })
    // ioredis logs unhandled 'error' events itself; the state change is what matters here.
    redis.on('error', () => { this.markDown() })
  }

  /** Probe every `intervalMs` so that a hung server (SIGSTOP) is noticed without traffic. */
  start (intervalMs = 1000): void {
    this.probe()
    this.timer = setInterval(() => { this.probe() }, intervalMs)
    this.timer.unref()
  }

  stop (): void {
    if (this.timer !== undefined) clearInterval(this.timer)
    // (a connection closed by the stop is no outage)
    this.watchers.length = 0
  }

  /** Called on every change: up (Redis answers again, or for the first time) and down. */
  onChange (watcher: (up: boolean) => void): void {
    this.watchers.push(watcher)
  }

  markUp (): void {
    const changed = !this.up
    this.up = true
    this.lastOkAt = this.now()
    for (const wake of this.waiters) wake()
    if (changed) for (const watcher of this.watchers) watcher(true)
  }

  /** Resolves true once Redis has answered (at once when it has), false when `ms` pass first. */
  async waitUp (ms: number): Promise<boolean> {
    if (this.up) return true
    return await new Promise<boolean>((resolve) => {
      const done = (up: boolean): void => {
        clearTimeout(timer)
        this.waiters.delete(wake)
        resolve(up)
      }
      const wake = (): void => { done(true) }
      const timer = setTimeout(() => { done(false) }, ms)
      this.waiters.add(wake)
    })
  }

  markDown (): void {
    if (!this.up) return
    this.up = false
    for (const watcher of this.watchers) watcher(false)
  }

  private probe (): void {
    if (this.redis.status !== 'ready') {
      this.markDown()
      return
    }
    const key = isCluster(this.redis) ? clusterProbeKeys.get(this.redis) : undefined
    const answer: Promise<unknown> = key === undefined ? this.redis.ping() : this.redis.exists(key)
    answer.then(() => { this.markUp() }, () => { this.markDown() })
  }
}
