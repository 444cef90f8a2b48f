/**
 * What keygate adds to ioredis's own connection handling, for every single-Redis or
 * Sentinel-managed connection redis-client.ts makes (a Cluster keeps its node
 * connections itself): where ioredis would end a client that keygate needs connected.
 */
import type { Redis } from 'ioredis'

/**
 * `persistent`: the connection is the gateway's, which reconnects for as long as its
 * retry strategy says (a duplicate given one that gives up, the invalidation tracker's,
 * reopens itself instead).
 */
export function kept (redis: Redis, o: { persistent: boolean }): Redis {
  followingFailovers(redis)
  if (o.persistent) neverGivingUp(redis)
  return redis
}

/** Whether neverGivingUp keeps this client connected (its duplicates inherit it). */
export function isPersistent (redis: Redis): boolean {
  return persistent.has(redis)
}

const persistent = new WeakSet<Redis>()

/**
 * A Sentinel-managed connection's failover detector (ioredis subscribes to
 * `+switch-master` on the sentinels when a connection opens) is stopped when that
 * connection closes. ioredis keeps it running after the close, and when it fires
 * while the client is reconnecting (still asking a sentinel where the master is) it
 * abandons that reconnect, and the client gives up for good: status `end`, every
 * command refused until a restart (SentinelConnector's `connecting` check; ioredis 5.11
 * and 6.0). Once closed, a connection has nothing left to detect: each reconnect asks
 * the sentinels afresh, and the connection it opens gets a detector of its own.
 * test/integration/registry/sentinel-reconnect-race.test.ts makes that race certain.
 */
function followingFailovers (redis: Redis): void {
  if (redis.options.failoverDetector !== true) return
  // (ioredis's private fields, read where they are used: should a release rename them, a close must not throw)
  const internals = redis as unknown as { connector?: { failoverDetector?: { cleanup: () => void } | null } }
  redis.on('close', () => { internals.connector?.failoverDetector?.cleanup() })
}

/**
 * A gateway connection never ends unless keygate stops it. ioredis ends a client for
 * good (status `end`: every command refused until a restart) when an attempt to
 * connect is abandoned while under way: its connector told to disconnect between the
 * start of a reconnect and its socket (a `disconnect(true)`, a failover detector), or
 * rejecting (`Redis._connect`'s error path; ioredis 5.11 and 6.0). An end keygate did
 * not ask for (`disconnect()`, `quit()`) starts a new attempt after the client's own
 * reconnect delay, so "reconnects that never give up" holds whatever the path.
 * test/integration/registry/redis-never-ends.test.ts ends a client that way.
 */
function neverGivingUp (redis: Redis): void {
  persistent.add(redis)
  let stopping = false
  let attempts = 0
  const disconnect = redis.disconnect.bind(redis)
  const quit = redis.quit.bind(redis)
  const stoppingDisconnect = (reconnect = false): void => {
    if (!reconnect) stopping = true
    disconnect(reconnect)
  }
  const stoppingQuit = ((...args: Parameters<typeof quit>) => {
    stopping = true
    return quit(...args)
  }) as typeof quit
  redis.disconnect = stoppingDisconnect
  redis.quit = stoppingQuit
  redis.on('ready', () => { attempts = 0 })
  redis.on('end', () => {
    if (stopping) return
    // (the client's own retry strategy decides, as ioredis's close handler asks it)
    const delay = redis.options.retryStrategy?.(++attempts)
    if (typeof delay !== 'number') return
    setTimeout(() => {
      if (!stopping && redis.status === 'end') redis.connect().catch(() => {}) // (reported as 'error')
    }, delay).unref()
  })
}
