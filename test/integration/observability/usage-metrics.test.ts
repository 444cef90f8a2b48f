/**
 * The usage counter's metrics (docs/metrics.md, "Usage counting"), with a real gateway
 * and a real Redis:
 *
 * - writes that fall behind: `usage.max_keys: 1`, and Redis pauses writes (CLIENT PAUSE
 *   WRITE; the cached keys need no Redis to be answered) while five keys are used once
 *   each. The first key's batch is being written (and waits for Redis), the next ones
 *   wait, and when the fifth key arrives more than twice max_keys keys wait: the oldest
 *   waiting batch (the second key's one request) is dropped; the two left are written
 *   together once the first write is done. keygate_usage_dropped_total{reason=
 *   "behind"} rises by exactly 1, and the usage endpoint is missing exactly that request.
 * - a write that fails: Redis is stopped; the requests answered meanwhile (from the cache,
 *   or 503) are counted, their write fails: keygate_usage_flush_errors_total rises and
 *   keygate_usage_dropped_total{reason="failed"} by exactly those requests; the warning
 *   logged names neither the key nor its id.
 */
import t from 'tap'
import { adminCall, eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { parsePromText } from '../../helpers/prom-text.js'
import { startPrivateRedis, uniquePrefix } from '../../helpers/redis.js'
import { withClient } from '../../helpers/redis-sentinel.js'

const TOKEN = 'usage-metrics-admin-token-0123456789'

/** every keygate_usage_* sample of a scrape: `name{labels}` -> value */
async function usageMetrics (gw: TestGateway): Promise<Map<string, number>> {
  const res = await gw.admin('GET', '/metrics')
  const out = new Map<string, number>()
  for (const f of parsePromText(res.body).values()) {
    for (const s of f.samples) {
      if (!s.name.startsWith('keygate_usage_')) continue
      const labels = Object.entries(s.labels).map(([k, v]) => `${k}="${v}"`).join(',')
      out.set(labels === '' ? s.name : `${s.name}{${labels}}`, s.value)
    }
  }
  return out
}

function delta (before: Map<string, number>, after: Map<string, number>, name: string): number {
  return (after.get(name) ?? Number.NaN) - (before.get(name) ?? Number.NaN)
}

async function allowedOf (gw: TestGateway, keyId: string, since: number): Promise<number> {
  const from = new Date(since - 120_000).toISOString()
  const to = new Date(Date.now() + 60_000).toISOString()
  const res = await adminCall(gw, 'GET', `/admin/v1/keys/${keyId}/usage?from=${from}&to=${to}&step=1m`, TOKEN)
  if (res.status !== 200) throw new Error(`usage of ${keyId}: ${res.status}`)
  return (res.json() as { points: Array<{ allowed: number }> }).points.reduce((n, p) => n + p.allowed, 0)
}

t.test('past twice usage.max_keys keys waiting for a write, a batch is dropped and counted as dropped', async (t) => {
  const gw = await startGateway(t, {
    env: { KEYGATE_ADMIN_TOKEN: TOKEN },
    // (the interval is long: only the full batches are written during the test; a write waits for the pause, never times out)
    yaml: 'usage: { max_keys: 1, flush_ms: 5000 }',
    configure: (c) => { c.redis.command_timeout_ms = 20_000 }
  })
  const keys = []
  for (let i = 0; i < 5; i++) keys.push(await gw.fixtures.personalKey('alice'))
  const start = Date.now()
  // each key used once: its records cached, its count written
  for (const k of keys) t.equal((await gw.get('/api/v1/users', k.key)).status, 200)
  await gw.app.counter.flush()
  const before = await usageMetrics(gw)
  t.equal(before.get('keygate_usage_dropped_total{reason="behind"}'), 0, 'nothing dropped yet')
  t.equal(before.get('keygate_usage_dropped_total{reason="failed"}'), 0)
  t.equal(before.get('keygate_usage_keys_held'), 0, 'nothing held after the flush')

  await withClient(gw.redis.port, async (c) => await c.call('CLIENT', 'PAUSE', '3000', 'WRITE'))
  const statuses = []
  for (const k of keys) statuses.push((await gw.get('/api/v1/users', k.key)).status)
  t.same(statuses, [200, 200, 200, 200, 200], 'the cached keys are answered while Redis pauses writes')
  const during = await usageMetrics(gw)
  t.equal(delta(before, during, 'keygate_usage_dropped_total{reason="behind"}'), 1, 'the second key\'s one request dropped')
  t.equal(delta(before, during, 'keygate_usage_full_batches_total'), 4, 'each key after the first made its batch full')
  t.equal(during.get('keygate_usage_keys_held'), 3, 'held: two batches waiting, the fifth key\'s (the one being written is not held)')

  // the pause ends, the writes go through
  t.not(await eventually(async () => gw.app.counter.held === 1, 10_000, 50), -1, 'the waiting batches are written once Redis takes writes again')
  await gw.app.counter.flush()
  const after = await usageMetrics(gw)
  t.equal(delta(before, after, 'keygate_usage_dropped_total{reason="behind"}'), 1)
  t.equal(delta(before, after, 'keygate_usage_dropped_total{reason="failed"}'), 0, 'no write failed')
  t.equal(delta(before, after, 'keygate_usage_flushes_total'), 3, 'three writes: the first key\'s batch, the two that waited for it, the fifth key\'s')
  t.equal(delta(before, after, 'keygate_usage_flush_errors_total'), 0)
  t.equal(delta(before, after, 'keygate_usage_flush_keys_count'), 3, 'one keys-per-write observation a write')
  t.equal(delta(before, after, 'keygate_usage_flush_keys_sum'), 4, 'four keys written')
  t.ok((after.get('keygate_usage_flush_keys_bucket{le="1"}') ?? 0) - (before.get('keygate_usage_flush_keys_bucket{le="1"}') ?? 0) === 2, 'two writes of one key, one of two')
  t.equal(delta(before, after, 'keygate_usage_flush_duration_seconds_count'), 3)
  t.ok(delta(before, after, 'keygate_usage_flush_duration_seconds_sum') > 0.5, 'the first write waited for the pause')

  const counted = []
  for (const k of keys) counted.push(await allowedOf(gw, k.id, start))
  t.same(counted, [2, 1, 2, 2, 2], 'the usage endpoint is missing exactly the dropped request')
  t.ok(gw.logs.some((l) => l.msg === 'usage: counts cannot be written and are dropped'), 'the drop is logged')
})

t.test('a write that fails (Redis stopped) is counted, and its warning names no key', async (t) => {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  const gw = await startGateway(t, { redis, prefix: uniquePrefix(), yaml: 'usage: { flush_ms: 5000 }' })
  const alice = await gw.fixtures.personalKey('alice')
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 200)
  await gw.app.counter.flush()
  const before = await usageMetrics(gw)
  t.equal(delta(before, before, 'keygate_usage_flushes_total'), 0, 'the counters are exported')

  await redis.stop()
  const statuses: number[] = []
  for (let i = 0; i < 3; i++) statuses.push((await gw.get('/api/v1/users', alice.key)).status)
  t.ok(statuses.every((s) => s === 200 || s === 503), `answered from the cache, or 503 (${statuses.join(' ')})`)
  const logsBefore = gw.rawLogs.length
  await gw.app.counter.flush()
  const after = await usageMetrics(gw)
  t.ok(delta(before, after, 'keygate_usage_flush_errors_total') >= 1, 'the failed write is counted')
  t.equal(delta(before, after, 'keygate_usage_flush_errors_total'), delta(before, after, 'keygate_usage_flushes_total'), 'every write since the stop failed')
  t.equal(delta(before, after, 'keygate_usage_dropped_total{reason="failed"}'), 3, 'exactly the three requests\' counts are lost')
  t.equal(delta(before, after, 'keygate_usage_dropped_total{reason="behind"}'), 0)
  t.equal(after.get('keygate_usage_keys_held'), 0, 'nothing held: a failed write is not retried')

  const warnings = gw.rawLogs.slice(logsBefore).filter((l) => l.includes('usage: counts cannot be written'))
  t.ok(warnings.length >= 1, 'the failure is logged')
  for (const line of warnings) {
    t.notOk(line.includes(alice.key), 'the warning holds no key')
    t.notOk(line.includes(alice.id), 'nor the key id')
    t.notOk(line.includes(gw.prefix), 'nor a Redis key name')
  }
})

t.test('usage.enabled: false: nothing counted, nothing written', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN }, yaml: 'usage: { enabled: false, flush_ms: 100 }' })
  const alice = await gw.fixtures.personalKey('alice')
  const start = Date.now()
  for (let i = 0; i < 3; i++) t.equal((await gw.get('/api/v1/users', alice.key)).status, 200)
  // three intervals
  await new Promise((resolve) => setTimeout(resolve, 300))
  await gw.app.counter.flush()
  const m = await usageMetrics(gw)
  t.equal(m.get('keygate_usage_flushes_total'), 0, 'no write')
  t.equal(m.get('keygate_usage_keys_held'), 0, 'nothing held')
  t.same(await gw.client.keys(`${gw.prefix}usage:{*`), [], 'no usage hash in Redis')
  t.equal(await allowedOf(gw, alice.id, start), 0, 'the usage endpoint answers zeros')
})
