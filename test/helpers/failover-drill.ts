/**
 * One failover under load, the same on every topology (test/integration/failover/): a
 * registry written through the CLI's own client, gateway instances as `keygate serve`
 * processes, load on all of them (test/helpers/load.ts), the primary that holds the
 * registry SIGKILLed, a key revoked and keys created while the topology fails over, and
 * then what held, from the answers and from Redis:
 *
 *   classes of key in the load   live    hot (cached) and cold (many, most not cached) keys,
 *                                        and keys created during the failover
 *                                unknown well-formed keys never issued
 *                                revoked keys revoked before the drill
 *                                during  a key revoked during the failover
 *
 * A wrong allow is a 200 for an unknown or revoked key, or for the key revoked during the
 * failover in a request sent a second (the contract's bound for a change) after both its
 * revocation was acknowledged and the instance was back on the new primary. docs/failover.md describes the
 * drill and keeps the figures of the last full run.
 */
import type { Test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { generateKey } from '../../src/registry/key-format.js'
import type { Config } from '../../src/config/schema.js'
import { createRedis, type RegistryClient } from '../../src/registry/redis-client.js'
import { Fixtures, type KeyFixture } from './fixtures.js'
import { eventually } from './gateway.js'
import { startGatewayProcess, type GatewayProcess } from './gateway-process.js'
import { FULL_SIZE, startLoad, startPlainUpstream, tally, type Sample } from './load.js'
import { send } from './raw-http.js'
import { redisSection } from './topology.js'

export interface Topology {
  /** the gateways' KEYGATE_REDIS_URL */
  url: string
  prefix: string
  /** resolves once the primary's replica holds everything written so far (WAIT) */
  replicated: () => Promise<void>
  /** SIGKILL the primary that holds the registry */
  killPrimary: () => void
  /** resolves when the topology has promoted a new primary for the registry */
  promoted: () => Promise<void>
}

export const DRILL_SIZE = FULL_SIZE
  ? {
      instances: 2,
      connections: 16,
      hotKeys: 50,
      coldKeys: 20_000,
      revoked: 100,
      unknown: 500,
      createdDuring: 20,
      beforeMs: 5000,
      afterMs: 15_000
    }
  : {
      instances: 2,
      connections: 4,
      hotKeys: 10,
      coldKeys: 400,
      revoked: 10,
      unknown: 20,
      createdDuring: 3,
      beforeMs: 1500,
      afterMs: 3000
    }

/** how long after a change is acknowledged every instance must decide by it (the contract: 1 s) */
export const CHANGE_BOUND_MS = 1000

/**
 * How long after the topology promoted a new primary a live key may still be refused (503):
 * the gateway's reconnection (backoff capped at 1 s, then the connection and, for Sentinel,
 * a round of the sentinels) and the cache's refill. docs/failover.md, "The refusal window".
 */
export const REFUSAL_WINDOW_MS = 5000

/**
 * All of a drill's load comes from one address, 127.0.0.1, which the per-address budget
 * of unknown keys (docs/cache.md) would soon exhaust: past it, a key the instance has not
 * seen is refused (401, `unknown_key_limited`) without a Redis read, cold live keys too.
 * Clients of a deployment come from many addresses; the drills raise the budget.
 */
const ONE_ADDRESS = { unknown_keys_per_peer: { per_second: 1_000_000, burst: 1_000_000 } }

export interface DrillReport {
  samples: Sample[]
  killedAt: number
  promotedAt: number
  revokedAt: number
  instances: GatewayProcess[]
  /** every key the registry must still hold, and whether it must be active */
  written: Array<{ id: string, active: boolean }>
  /** keys that must be allowed after the drill, on every instance, and their path */
  live: Array<{ key: string, path: string }>
  during: KeyFixture
  /** a new registry client, after the failover */
  client: () => RegistryClient
  prefix: string
}

/**
 * The registry client the CLI would use for this topology (queueing while it connects),
 * with generous timeouts (5 s, 10 s for a command): the seed's pipelines are large, and
 * no drill is about the CLI's own timeouts.
 */
export function adminClient (t: Test, url: string, prefix: string): RegistryClient {
  const client = createRedis(patient(redisSection(url, prefix)), { queueWhileConnecting: true })
  client.on('error', () => {})
  t.teardown(() => { client.disconnect() })
  return client
}

function patient (section: Config['redis']): Config['redis'] {
  return { ...section, command_timeout_ms: 10_000, connect_timeout_ms: 5000 }
}

/** `action` again every 100 ms until it succeeds (a write through a failover) */
async function retried<T> (action: () => Promise<T>, ms = 60_000): Promise<T> {
  const deadline = Date.now() + ms
  for (;;) {
    try {
      return await action()
    } catch (err: unknown) {
      if (Date.now() > deadline) throw err
      await sleep(100)
    }
  }
}

/** Many BOT keys (orgreader, acme), written a thousand to a pipeline. */
async function bulkKeys (fx: Fixtures, count: number): Promise<KeyFixture[]> {
  const out: KeyFixture[] = []
  for (let start = 0; start < count; start += 1000) {
    const names = Array.from({ length: Math.min(1000, count - start) }, (_v, i) => `cold ${start + i}`)
    out.push(...await fx.bulkBotKeyFixtures('orgreader', 'acme', names))
  }
  return out
}

export async function runFailoverDrill (t: Test, topo: Topology): Promise<DrillReport> {
  const size = DRILL_SIZE
  const client = adminClient(t, topo.url, topo.prefix)
  const fx = new Fixtures(client, topo.prefix)
  await fx.standardWorld()
  const hot = await Promise.all(Array.from({ length: size.hotKeys }, async () => await fx.personalKey('alice')))
  const cold = await bulkKeys(fx, size.coldKeys)
  const revoked = await Promise.all(Array.from({ length: size.revoked }, async () => await fx.personalKey('bob')))
  for (const k of revoked) await fx.admin.revokeKey(k.id)
  const during = await fx.personalKey('alice')
  const unknown = Array.from({ length: size.unknown }, () => generateKey('kg_').key)
  await topo.replicated()

  const upstream = await startPlainUpstream()
  t.teardown(async () => { await upstream.close() })
  const instances: GatewayProcess[] = []
  for (let i = 0; i < size.instances; i++) {
    const name = `gateway ${i}`
    instances.push(await startGatewayProcess(t, {
      name, redisUrl: topo.url, prefix: topo.prefix, upstreamUrl: upstream.url, extra: { limits: ONE_ADDRESS }
    }))
  }
  // every hot key cached on every instance
  for (const gw of instances) {
    for (const k of hot) await send(gw.port, 'GET', '/api/v1/users', { Authorization: `Bearer ${k.key}` })
  }

  const created: KeyFixture[] = []
  const pick = (): { cls: string, key: string, path: string } => {
    const r = Math.random()
    const any = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)] as T
    if (r < 0.35) return { cls: 'live', key: any(hot).key, path: '/api/v1/users' }
    if (r < 0.55) return { cls: 'live', key: any(cold).key, path: '/api/v1/orgs/acme/x' }
    if (r < 0.6 && created.length > 0) return { cls: 'live', key: any(created).key, path: '/api/v1/users' }
    if (r < 0.75) return { cls: 'unknown', key: any(unknown), path: '/api/v1/users' }
    if (r < 0.9) return { cls: 'revoked', key: any(revoked).key, path: '/api/v1/users' }
    return { cls: 'during', key: during.key, path: '/api/v1/users' }
  }
  const load = startLoad(instances.map((g) => g.port), size.connections, pick)
  await sleep(size.beforeMs)

  const killedAt = Date.now()
  topo.killPrimary()
  let promotedAt = 0
  const promotion = topo.promoted().then(() => { promotedAt = Date.now() })
  // changes made while the topology fails over, each as a CLI run would make it (a client
  // of its own, which gives up after three rounds over the topology; then run again),
  // acknowledged once a new primary has it
  const attempt = async <T>(write: (f: Fixtures) => Promise<T>): Promise<T> => await retried(async () => {
    const fresh = createRedis(patient(redisSection(topo.url, topo.prefix)), { queueWhileConnecting: true })
    fresh.on('error', () => {})
    try {
      return await write(new Fixtures(fresh, topo.prefix))
    } finally {
      fresh.disconnect()
    }
  })
  const revocation = attempt(async (f) => await f.admin.revokeKey(during.id)).then(() => Date.now())
  const creations = (async () => {
    for (let i = 0; i < size.createdDuring; i++) created.push(await attempt(async (f) => await f.personalKey('alice')))
  })()
  const [revokedAt] = await Promise.all([revocation, promotion, creations])
  await sleep(size.afterMs)
  const samples = await load.stop()

  const written = [
    ...[...hot, ...cold, ...created].map((k) => ({ id: k.id, active: true })),
    ...[...revoked, during].map((k) => ({ id: k.id, active: false }))
  ]
  const live = [
    ...[...hot.slice(0, 5), ...created].map((k) => ({ key: k.key, path: '/api/v1/users' })),
    ...cold.slice(0, 20).map((k) => ({ key: k.key, path: '/api/v1/orgs/acme/x' }))
  ]
  const after = (): RegistryClient => adminClient(t, topo.url, topo.prefix)
  return {
    samples, killedAt, promotedAt, revokedAt, instances, written, live, during, client: after, prefix: topo.prefix
  }
}

/** When the instance's push invalidation was established again after `since` (its log line), if it was. */
function backOnPrimary (g: GatewayProcess, since: number): number | undefined {
  const line = g.lines().find((l) => typeof l.time === 'number' && l.time > since &&
    typeof l.msg === 'string' && l.msg.includes('push invalidation established'))
  return line?.time as number | undefined
}

/** An instance's last 20 log lines, but its request lines, and its stderr: what it said while it refused. */
function lastLines (g: GatewayProcess): string {
  // (a line said again and again, such as a retry's warning, once: its last time and how often, so it cannot push
  // out what the instance said when it stopped answering)
  const times = new Map<unknown, number>()
  const last: ReturnType<GatewayProcess['lines']> = []
  for (const l of g.lines().filter((l) => l.status === undefined).reverse()) {
    const seen = times.get(l.msg)
    times.set(l.msg, (seen ?? 0) + 1)
    if (seen === undefined && last.length < 20) last.unshift(l)
  }
  const said = last.map((l) => {
    const n = times.get(l.msg) ?? 1
    return JSON.stringify(l) + (n > 1 ? ` (x${n})` : '')
  })
  return [...said, g.stderr()].join('\n')
}

/** What a drill must show (docs/failover.md), as tap assertions, and its figures as comments. */
export async function checkDrill (t: Test, r: DrillReport, refusalWindowMs: number): Promise<void> {
  const { samples } = r
  const of = (cls: string): Sample[] => samples.filter((s) => s.cls === cls)
  // the key revoked during the failover: refused a second after its revocation, or after the
  // instance is back on the new primary (push invalidation established again), whichever is
  // later; until then the instance serves what it holds, within the stale window
  const back = r.instances.map((g) => backOnPrimary(g, r.killedAt) ?? r.promotedAt + refusalWindowMs)
  const lateBound = back.map((at) => Math.max(r.revokedAt, at) + CHANGE_BOUND_MS)
  const mustRefuse = (s: Sample): boolean =>
    s.cls === 'unknown' || s.cls === 'revoked' || (s.cls === 'during' && s.sent > (lateBound[s.instance] ?? 0))
  const wrongAllows = samples.filter((s) => s.status === 200 && mustRefuse(s))
  const live = of('live')
  const refusedLive = live.filter((s) => s.status !== 200)
  const lastRefusal = Math.max(...refusedLive.map((s) => s.sent), r.killedAt)
  const lastDuringAllow = Math.max(...of('during').filter((s) => s.status === 200).map((s) => s.done), 0)
  const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`

  t.comment(`requests: ${samples.length} (${tally(samples)}) on ${r.instances.length} instances`)
  for (const cls of ['live', 'unknown', 'revoked', 'during']) t.comment(`  ${cls}: ${tally(of(cls))}`)
  t.comment(`primary killed; new primary after ${seconds(r.promotedAt - r.killedAt)}; ` +
    `the revocation made during it acknowledged after ${seconds(r.revokedAt - r.killedAt)}`)
  t.comment(`live keys refused: ${refusedLive.length} (${tally(refusedLive)}), the last sent ` +
    `${seconds(lastRefusal - r.killedAt)} after the kill, ${seconds(lastRefusal - r.promotedAt)} after the promotion`)
  const lastAllowed = lastDuringAllow === 0
    ? 'never'
    : `${seconds(lastDuringAllow - r.revokedAt)} after the acknowledgement`
  t.comment(`the key revoked during the failover: last allowed ${lastAllowed}; instances back on the new primary ` +
    `${back.map((at) => seconds(at - r.promotedAt)).join(', ')} after the promotion`)
  const reasons = new Map<string, number>()
  for (const line of r.instances.flatMap((g) => g.lines())) {
    if (typeof line.status === 'number' && line.status >= 400) {
      const key = `${line.status} ${String(line.reason)}`
      reasons.set(key, (reasons.get(key) ?? 0) + 1)
    }
  }
  t.comment(`refusals logged by the instances: ${[...reasons].map(([k, n]) => `${k} x${n}`).join(', ') || 'none'}`)

  t.ok(['live', 'unknown', 'revoked', 'during'].every((cls) => of(cls).length > 0), 'every class of key was sent')
  t.same(wrongAllows.map((s) => `${s.cls} ${s.status} on ${s.instance}`), [], '0 wrong allows')
  const errors = samples.filter((s) => s.status >= 500 && s.status !== 503).map((s) => s.status)
  t.same(errors, [], '0 500s (nor any other 5xx than 503)')
  t.same(samples.filter((s) => s.status === 0).length, 0, 'every request got an answer')
  const others = samples.filter((s) => ![200, 401, 503].includes(s.status)).map((s) => s.status)
  t.same(others, [], 'every answer is 200, 401 or 503')
  t.same(refusedLive.filter((s) => s.status !== 503).map((s) => s.status), [],
    'a live key is never refused but with 503 (never a 401 for a key that exists)')
  // (a request in flight when the primary died may be refused: it is answered after the kill)
  const outside = refusedLive.filter((s) => s.done < r.killedAt || s.sent > r.promotedAt + refusalWindowMs)
  t.same(outside.map((s) => s.sent - r.killedAt), [],
    `a live key is refused only between the kill and ${refusalWindowMs} ms after the promotion`)

  for (const gw of r.instances) {
    const status = async (k: { key: string, path: string }): Promise<number> =>
      (await send(gw.port, 'GET', k.path, { Authorization: `Bearer ${k.key}` })).status
    // once the instance answers again, every live key must be allowed at once; an instance
    // still refusing with 503 a minute later fails here with its own last log lines, rather
    // than the file's timeout with none
    const first = r.live[0] as { key: string, path: string }
    const back = await eventually(async () => await status(first) !== 503, 60_000, 200)
    if (back < 0) t.comment(`${gw.name}'s last log lines:\n${lastLines(gw)}`)
    t.ok(back >= 0, `${gw.name}: answers again within a minute of the drill's end`)
    if (back < 0) continue
    const statuses: number[] = []
    for (const k of r.live) statuses.push(await status(k))
    t.same(statuses.filter((s) => s !== 200), [], `${gw.name}: every live key is allowed after the failover`)
    const revoked = await send(gw.port, 'GET', '/api/v1/users', { Authorization: `Bearer ${r.during.key}` })
    t.equal(revoked.status, 401, `${gw.name}: the key revoked during the failover is refused`)
  }

  // no key lost: every record written, on the new primary, with its status
  const pipeline = r.client().pipeline()
  for (const w of r.written) pipeline.hget(`${r.prefix}key:${w.id}`, 'status')
  const statuses = (await pipeline.exec() ?? []).map(([err, v]) => err === null ? v : `error ${String(err)}`)
  const lost = r.written.filter((w, i) => statuses[i] !== (w.active ? 'active' : 'revoked'))
  t.comment(`registry after the failover: ${r.written.length - lost.length} of ${r.written.length} records as written`)
  t.same(lost.map((w) => w.id), [], 'no key lost from the registry (nor a revocation)')
}
