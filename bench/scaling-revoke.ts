// The revocation bound under load (bench/scaling.ts): three gateways on one Redis, each
// loaded with a cached key by autocannon on a thread of its own (bench/load-thread.ts);
// one at a time, a key every instance holds in its cache is revoked through the admin
// action `keys revoke` runs (AdminActions#revokeKey: WATCH, read, MULTI/EXEC with its
// audit entry), and each instance is probed with the key every millisecond, whatever
// the earlier probes' answers, from the action's call until it has answered 401.
//
// Two times per instance and change, both from the action's call:
// - the bound: the send time of the last probe allowed. Every request sent after it was
//   refused, so this is when the revocation took effect for a client; it includes the
//   action's round trips, the invalidation's push and the gateway reading it, and
//   resolves to the probes' millisecond;
// - the first 401 answered: the bound plus one request's time through the loaded
//   gateway, the client's view (a saturated gateway's queue is in it).
// Redis's commands and bytes over the phase, less the load's and the background's, are
// the invalidation's fan-out per change.
import { Pool } from 'undici'
import type { NewKey } from '@keygate/gateway/dist/registry/key-format.js'
import { parseConfig } from '@keygate/gateway/dist/config/load.js'
import { createRedis } from '@keygate/gateway/dist/registry/redis-client.js'
import { adminActions, adminWing } from '@keygate/gateway/dist/admin/actions/index.js'
import { FULL_ADMIN } from '@keygate/gateway/dist/admin/model/principal.js'
import type { KeygateServer } from './keygate.js'
import { startLoadThread } from './load-thread.js'
import { BENCH_PATH } from './servers.js'
import { percentile } from './stats.js'

export interface RevocationResult {
  /** ms from the action's call to the send time of each instance's last probe allowed (0: none), every change */
  bound: number[]
  /** ms from the action's call to each instance's first 401 answered, every instance of every change */
  firstRefusal: number[]
  /** the action's own duration (its reply), ms, per change */
  actionMs: number[]
  /** probes allowed though sent after a probe of the same instance that was refused */
  allowedAfterRefused: number
  /** the longest time between two probes of one instance, ms: the bound's resolution */
  probeGapMs: number
  /** load responses per second over every instance, and how many were not 200 */
  loadReqPerSec: number
  loadBad: number
  /** the load's own latency, p50 and p99, the worst instance's */
  loadP50Ms: number
  loadP99Ms: number
  /** changes an instance never refused within 5 s */
  lost: number
  wallSec: number
}

const PROBE_EVERY_MS = 1
const GIVE_UP_MS = 5000

interface Probed { bound: number, firstRefusal: number, allowedAfterRefused: number, gap: number }

/** One request with `key` through `pool`: its status, the body read out. */
async function statusOf (pool: Pool, key: string): Promise<number> {
  const res = await pool.request({ method: 'GET', path: BENCH_PATH, headers: { authorization: `Bearer ${key}` } })
  await res.body.dump()
  return res.statusCode
}

/** Probes `key` on one instance every millisecond from `since` until a 401 is answered (-1: never, in 5 s). */
async function probeUntilRefused (pool: Pool, key: string, since: number): Promise<Probed> {
  const sent: Array<Promise<{ at: number, status: number }>> = []
  let last = 0
  let firstRefusal = -1
  let gap = 0
  while (firstRefusal < 0 && performance.now() - since < GIVE_UP_MS) {
    const at = performance.now() - since
    gap = Math.max(gap, at - (sent.length === 0 ? 0 : last))
    last = at
    sent.push(statusOf(pool, key).then((status) => {
      if (status === 401 && firstRefusal < 0) firstRefusal = performance.now() - since
      return { at, status }
    }))
    await new Promise((resolve) => setTimeout(resolve, PROBE_EVERY_MS))
  }
  const answers = await Promise.all(sent)
  const unexpected = answers.find((a) => a.status !== 200 && a.status !== 401)
  if (unexpected !== undefined) throw new Error(`revocation: a probe answered ${unexpected.status}`)
  const allowed = answers.filter((a) => a.status === 200).map((a) => a.at)
  const firstRefusedSent = answers.find((a) => a.status === 401)?.at ?? Infinity
  return {
    bound: Math.max(0, ...allowed),
    firstRefusal,
    allowedAfterRefused: allowed.filter((at) => at > firstRefusedSent).length,
    gap
  }
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
  const pools = gateways.map((g) => new Pool(`http://127.0.0.1:${g.port}`, { connections: 64 }))
  const load = await startLoadThread(gateways.map((g) => ({
    url: `http://127.0.0.1:${g.port}${BENCH_PATH}`,
    headers: { authorization: `Bearer ${loadKey}` },
    connections
  })))
  const started = performance.now()
  let stopped = false
  try {
    // every key in every instance's cache, then the load's first seconds
    for (const key of keys) {
      for (const pool of pools) {
        if (await statusOf(pool, key.key) !== 200) throw new Error('revocation: a key to revoke was not 200 first')
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 2000))
    const bound: number[] = []
    const firstRefusal: number[] = []
    const actionMs: number[] = []
    let allowedAfterRefused = 0
    let probeGapMs = 0
    let lost = 0
    for (const key of keys) {
      const since = performance.now()
      const action = actions.revokeKey(key.id).then(() => { actionMs.push(performance.now() - since) })
      const probed = await Promise.all(pools.map(async (pool) => await probeUntilRefused(pool, key.key, since)))
      await action
      for (const p of probed) {
        allowedAfterRefused += p.allowedAfterRefused
        probeGapMs = Math.max(probeGapMs, p.gap)
        if (p.firstRefusal < 0) lost++
        else {
          bound.push(p.bound)
          firstRefusal.push(p.firstRefusal)
        }
      }
      // (changes 50 ms apart: one at a time, as an operator's are)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    stopped = true
    const results = await load.stop()
    const wallSec = (performance.now() - started) / 1000
    const byNumber = (a: number, b: number): number => a - b
    return {
      bound: bound.sort(byNumber),
      firstRefusal: firstRefusal.sort(byNumber),
      actionMs: actionMs.sort(byNumber),
      allowedAfterRefused,
      probeGapMs,
      loadReqPerSec: results.reduce((n, r) => n + r.responses, 0) / wallSec,
      loadBad: results.reduce((n, r) => n + r.bad, 0),
      loadP50Ms: Math.max(...results.map((r) => r.p50Ms)),
      loadP99Ms: Math.max(...results.map((r) => r.p99Ms)),
      lost,
      wallSec
    }
  } finally {
    if (!stopped) await load.stop()
    await Promise.all(pools.map(async (p) => await p.close()))
    redis.disconnect()
  }
}

export function revocationSummary (r: RevocationResult): string {
  const p = (sorted: number[], q: number): string => percentile(sorted, q).toFixed(1)
  const ms = (n: number): string => n.toFixed(1)
  return `every request sent after p50 ${p(r.bound, 50)} ms, p99 **${p(r.bound, 99)} ms**, ` +
    `max ${ms(r.bound.at(-1) ?? NaN)} ms was refused, over ${r.bound.length} instance-changes, ` +
    `probes at most ${ms(r.probeGapMs)} ms apart ` +
    `(the first 401 answered: p50 ${p(r.firstRefusal, 50)} ms, p99 ${p(r.firstRefusal, 99)} ms; ` +
    `the action itself: p50 ${p(r.actionMs, 50)} ms, p99 ${p(r.actionMs, 99)} ms; ` +
    `a request of the load meanwhile: p50 ${ms(r.loadP50Ms)} ms, p99 ${ms(r.loadP99Ms)} ms; ` +
    `probes allowed though sent after one refused: ${r.allowedAfterRefused})`
}
