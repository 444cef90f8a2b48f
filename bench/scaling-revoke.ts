// The revocation bound under load (bench/scaling.ts): three gateways on one Redis, each
// loaded by its own autocannon with a cached key; one at a time, a key every instance
// holds in its cache is revoked through the admin action `keys revoke` runs
// (AdminActions#revokeKey: WATCH, read, MULTI/EXEC with its audit entry), and each
// instance is polled with the key (keep-alive, two connections each) from the moment the
// action is called until it answers 401. The time is from the call, so it includes the
// action's own round trips, the invalidation's push and a request through the loaded
// gateway. Redis's commands and bytes over the phase, less the load's and the
// background's, are the invalidation's fan-out per change.
import { Pool } from 'undici'
import autocannon from 'autocannon'
import type { NewKey } from '@keygate/gateway/dist/registry/key-format.js'
import { parseConfig } from '@keygate/gateway/dist/config/load.js'
import { createRedis } from '@keygate/gateway/dist/registry/redis-client.js'
import { adminActions, adminWing } from '@keygate/gateway/dist/admin/actions/index.js'
import { FULL_ADMIN } from '@keygate/gateway/dist/admin/model/principal.js'
import type { KeygateServer } from './keygate.js'
import { BENCH_PATH } from './servers.js'
import { percentile } from './stats.js'

export interface RevocationResult {
  /** ms from the action's call to each instance's first 401, every instance of every change */
  delays: number[]
  /** the action's own duration (its reply), ms, per change */
  actionMs: number[]
  /** ms from the action's reply (the write acknowledged) to each instance's first 401 (0: before the reply) */
  afterAck: number[]
  /** load responses per second over every instance, and how many were not 200 */
  loadReqPerSec: number
  loadBad: number
  /** the load's own latency (autocannon, 1 ms resolution), p50 and p99, the worst instance's */
  loadP50Ms: number
  loadP99Ms: number
  /** changes an instance never refused within 5 s */
  lost: number
  wallSec: number
}

export async function revocationUnderLoad (
  gateways: readonly KeygateServer[], redisUrl: string, prefix: string, keys: readonly NewKey[],
  loadKey: string, connections: number
): Promise<RevocationResult> {
  const config = parseConfig(
    `redis: { prefix: "${prefix}" }\n`, { KEYGATE_REDIS_URL: redisUrl }, 'bench', { forServing: false }
  )
  const redis = createRedis(config.redis)
  const actions = adminActions(adminWing(config, redis), FULL_ADMIN, 'bench-scaling')
  const pools = gateways.map((g) => new Pool(`http://127.0.0.1:${g.port}`, { connections: 2 }))
  const status = async (pool: Pool, key: string): Promise<number> => {
    const res = await pool.request({ method: 'GET', path: BENCH_PATH, headers: { authorization: `Bearer ${key}` } })
    await res.body.dump()
    return res.statusCode
  }
  const loads = gateways.map((g) => autocannon({
    url: `http://127.0.0.1:${g.port}${BENCH_PATH}`,
    headers: { authorization: `Bearer ${loadKey}` },
    connections,
    duration: 3600
  }))
  const started = performance.now()
  try {
    // every key in every instance's cache, then the load's first seconds
    for (const key of keys) {
      for (const pool of pools) {
        if (await status(pool, key.key) !== 200) throw new Error('revocation: a key to revoke was not 200 first')
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 2000))
    const delays: number[] = []
    const actionMs: number[] = []
    const afterAck: number[] = []
    let lost = 0
    for (const key of keys) {
      const since = performance.now()
      const action = actions.revokeKey(key.id).then(() => { actionMs.push(performance.now() - since) })
      const arrivals = await Promise.all(pools.map(async (pool) => {
        while (performance.now() - since < 5000) {
          if (await status(pool, key.key) === 401) return performance.now() - since
        }
        return -1
      }))
      await action
      const ack = actionMs.at(-1) as number
      for (const ms of arrivals) {
        if (ms < 0) lost++
        else {
          delays.push(ms)
          afterAck.push(Math.max(0, ms - ack))
        }
      }
      // (changes 50 ms apart: one at a time, as an operator's are)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    for (const l of loads) l.stop()
    const results = await Promise.all(loads)
    const wallSec = (performance.now() - started) / 1000
    const total = results.reduce((n, r) => n + r.requests.total, 0)
    return {
      delays: delays.sort((a, b) => a - b),
      actionMs: actionMs.sort((a, b) => a - b),
      afterAck: afterAck.sort((a, b) => a - b),
      loadReqPerSec: total / wallSec,
      loadBad: results.reduce((n, r) => n + r.non2xx + r.errors, 0),
      loadP50Ms: Math.max(...results.map((r) => r.latency.p50)),
      loadP99Ms: Math.max(...results.map((r) => r.latency.p99)),
      lost,
      wallSec
    }
  } finally {
    for (const l of loads) l.stop()
    await Promise.all(pools.map(async (p) => await p.close()))
    redis.disconnect()
  }
}

export function revocationSummary (r: RevocationResult): string {
  const p = (sorted: number[], q: number): string => percentile(sorted, q).toFixed(1)
  return `p50 ${p(r.delays, 50)} ms, p99 **${p(r.delays, 99)} ms**, max ${(r.delays.at(-1) ?? NaN).toFixed(1)} ms ` +
    `over ${r.delays.length} refusals (the action itself: p50 ${p(r.actionMs, 50)} ms, p99 ${p(r.actionMs, 99)} ms; ` +
    `from its reply to the refusal: p50 ${p(r.afterAck, 50)} ms, p99 ${p(r.afterAck, 99)} ms; ` +
    `a request of the load meanwhile: p50 ${r.loadP50Ms} ms, p99 ${r.loadP99Ms} ms)`
}
