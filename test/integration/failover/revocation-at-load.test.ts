/**
 * Revocation at full load (docs/failover.md): three `keygate serve` instances on one
 * Redis, as much load as the client's connections carry, and keys revoked one after the
 * other through the admin actions (what `keygate keys revoke` calls). For each
 * revocation and each instance, the time from the start of the revoke to the first 401
 * for that key, probed on a connection of its own, is measured; p50, p99 and max are
 * reported (the performance issue's target: p99 <= 20 ms). Every revocation must reach
 * every instance, and no request sent a second after a revocation was acknowledged is
 * allowed with that key. Reduced here; full size with `npm run chaos`.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { Pool } from 'undici'
import { Fixtures, type KeyFixture } from '../../helpers/fixtures.js'
import { startGatewayProcess, type GatewayProcess } from '../../helpers/gateway-process.js'
import { FULL_SIZE, percentile, startLoad, startPlainUpstream, tally } from '../../helpers/load.js'
import { startPrivateRedis, uniquePrefix } from '../../helpers/redis.js'

const SIZE = FULL_SIZE
  ? { revocations: 200, hotKeys: 100, connections: 24 }
  : { revocations: 20, hotKeys: 20, connections: 4 }
const TARGET_P99_MS = 20
const ARRIVAL_LIMIT_MS = 3000

t.test('p99 from keys revoke to refusal on three instances at full load', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const prefix = uniquePrefix()
  const fx = new Fixtures(client, prefix)
  await fx.standardWorld()
  const hot = await Promise.all(Array.from({ length: SIZE.hotKeys }, async () => await fx.personalKey('alice')))
  const targets = await Promise.all(Array.from({ length: SIZE.revocations }, async () => await fx.personalKey('alice')))
  const upstream = await startPlainUpstream()
  t.teardown(async () => { await upstream.close() })
  const instances: GatewayProcess[] = []
  for (let i = 0; i < 3; i++) {
    instances.push(await startGatewayProcess(t, {
      name: `gateway ${i}`, redisUrl: redis.url, prefix, upstreamUrl: upstream.url
    }))
  }
  const probes = instances.map((g) => new Pool(`http://127.0.0.1:${g.port}`, { connections: 1 }))
  t.teardown(async () => { await Promise.all(probes.map(async (p) => await p.close())) })
  const status = async (pool: Pool, key: string): Promise<number> => {
    const headers = { authorization: `Bearer ${key}` }
    const res = await pool.request({ method: 'GET', path: '/api/v1/users', headers })
    await res.body.dump()
    return res.statusCode
  }
  // every target cached on every instance, as a key in use is
  const before: number[] = []
  for (const pool of probes) for (const k of targets) before.push(await status(pool, k.key))
  t.same(before.filter((s) => s !== 200), [], 'every target works before its revocation')

  const revokedAt = new Map<string, number>()
  const live = [...hot]
  const revoked: KeyFixture[] = []
  const any = <T>(list: readonly T[]): T => list[Math.floor(Math.random() * list.length)] as T
  const pick = (): { cls: string, key: string, path: string } => revoked.length > 0 && Math.random() < 0.2
    ? { cls: 'revoked', key: any(revoked).key, path: '/api/v1/users' }
    : { cls: 'live', key: any(live).key, path: '/api/v1/users' }
  const load = startLoad(instances.map((g) => g.port), SIZE.connections, pick)
  await new Promise((resolve) => setTimeout(resolve, 1000))

  const fromStart: number[] = []
  const fromAck: number[] = []
  let lost = 0
  for (const target of targets) {
    const start = performance.now()
    await fx.admin.revokeKey(target.id)
    const ack = performance.now()
    revokedAt.set(target.key, Date.now())
    const arrivals = await Promise.all(probes.map(async (pool) => {
      while (performance.now() - start < ARRIVAL_LIMIT_MS) {
        if (await status(pool, target.key) === 401) return performance.now()
      }
      return -1
    }))
    for (const at of arrivals) {
      if (at < 0) { lost++; continue }
      fromStart.push(at - start)
      fromAck.push(at - ack)
    }
    revoked.push(target)
  }
  const samples = await load.stop()
  const seconds = (Math.max(...samples.map((s) => s.done)) - Math.min(...samples.map((s) => s.sent))) / 1000
  fromStart.sort((a, b) => a - b)
  fromAck.sort((a, b) => a - b)
  const p99 = percentile(fromStart, 99)
  const latencies = samples.map((s) => s.done - s.sent).sort((a, b) => a - b)
  t.comment(`load: ${samples.length} requests in ${seconds.toFixed(1)} s (${Math.round(samples.length / seconds)}/s) ` +
    `on 3 instances, ${SIZE.connections} connections each: ${tally(samples)}; ` +
    `a request's latency p50 ${percentile(latencies, 50)} ms, p99 ${percentile(latencies, 99)} ms`)
  t.comment(`revoke to refusal, ${fromStart.length} arrivals (${SIZE.revocations} revocations x 3 instances): ` +
    `p50 ${percentile(fromStart, 50).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, ` +
    `max ${(fromStart.at(-1) ?? Number.NaN).toFixed(1)} ms; ` +
    `from the acknowledgement p50 ${percentile(fromAck, 50).toFixed(1)} ms, ` +
    `p99 ${percentile(fromAck, 99).toFixed(1)} ms`)
  t.comment(`target p99 <= ${TARGET_P99_MS} ms: ${p99 <= TARGET_P99_MS ? 'met' : 'NOT met'}`)

  t.equal(lost, 0, `every revocation reached every instance within ${ARRIVAL_LIMIT_MS} ms`)
  const late = samples.filter((s) => s.cls === 'revoked' && s.status === 200 &&
    s.sent > (revokedAt.get(s.key) ?? 0) + 1000)
  t.equal(late.length, 0, 'no request sent a second after its key\'s revocation was acknowledged was allowed')
  // (a 503 is the gateway failing closed when Redis does not answer within its command
  // timeout, which a machine busy enough can cause; counted above, never an allow)
  const others = samples.filter((s) => ![200, 401, 503].includes(s.status)).map((s) => s.status)
  t.same(others, [], 'every answer is 200, 401 or 503')
})
