// GET /metrics on the admin plane (issue 5 item 4): Prometheus text that parses
// strictly (test/helpers/prom-text.ts), needs no credential, and whose counters move
// with traffic by exactly the right amounts under exactly the right labels: requests
// by rule, status and reason; request, auth-decision and upstream latency histograms;
// cache hits, misses and invalidations; upstream errors by kind; Redis state and
// errors. No metric carries a key, a key id, a raw path or a query string.
import t from 'tap'
import type { Test } from 'tap'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { parsePromText, type PromFamily } from '../../helpers/prom-text.js'
import { refusedPort } from '../../helpers/upstream.js'
import { generateKey } from '../../../src/registry/key-format.js'

type Families = Map<string, PromFamily>

interface Scrape {
  status: number
  contentType: string | undefined
  text: string
  families: Families
}

async function scrape (gw: TestGateway): Promise<Scrape> {
  const res = await gw.admin('GET', '/metrics')
  return { status: res.status, contentType: res.headers['content-type'], text: res.body, families: parsePromText(res.body) }
}

/** Every series of the samples named `name`: `{"a":"1",...}` (sorted labels) -> value. */
function series (f: Families, name: string): Map<string, number> {
  const out = new Map<string, number>()
  for (const family of f.values()) {
    for (const s of family.samples) {
      if (s.name === name) out.set(labelKey(s.labels), s.value)
    }
  }
  return out
}

function labelKey (labels: Record<string, string>): string {
  return JSON.stringify(Object.fromEntries(Object.entries(labels).sort(([a], [b]) => a < b ? -1 : 1)))
}

/** after - before, for every series of `name` in either scrape (absent = 0). */
function deltas (before: Families, after: Families, name: string): Map<string, number> {
  const b = series(before, name)
  const a = series(after, name)
  const out = new Map<string, number>()
  for (const key of new Set([...b.keys(), ...a.keys()])) out.set(key, (a.get(key) ?? 0) - (b.get(key) ?? 0))
  return out
}

/** The series of `name` that moved must be exactly `expected` (labels -> delta); every other one stays. */
function assertDeltas (t: Test, before: Families, after: Families, name: string, expected: Array<[Record<string, string>, number]>): void {
  const moved = new Map([...deltas(before, after, name)].filter(([, d]) => d !== 0))
  const want = new Map(expected.filter(([, d]) => d !== 0).map(([labels, d]) => [labelKey(labels), d]))
  t.same(Object.fromEntries(moved), Object.fromEntries(want), `${name}: exactly these series moved, by exactly these amounts`)
}

function one (f: Families, name: string, labels: Record<string, string> = {}): number | undefined {
  return series(f, name).get(labelKey(labels))
}

const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0)

t.test('GET /metrics: strict Prometheus text, and counters that move with traffic', async (t) => {
  const down = await refusedPort()
  const gw = await startGateway(t, {
    configure: (config) => {
      const core = config.upstreams.core
      if (core === undefined) throw new Error('no upstream "core"')
      config.upstreams.down = { ...core, url: `http://127.0.0.1:${down}` }
      config.routes.push({ prefix: '/api/v2', upstream: 'down' })
      config.rules.push({ method: 'GET', path: '/api/v2/things', permissions: [] })
    }
  })
  const alice = await gw.fixtures.personalKey('alice')
  const unknown = generateKey(gw.config.keys.prefix)
  const QUERY = 'QUERYSECRET'

  // The fixtures' writes reach the gateway as invalidations; they arrive in order on one
  // connection, so once a later write's invalidation is counted, all of theirs are.
  const start = await scrape(gw)
  const invalidationsBefore = one(start.families, 'keygate_cache_invalidations_total') ?? NaN
  await gw.client.hset(gw.fixtures.keys.role('metrics-barrier'), 'permissions', 'x:y')
  const waited = await eventually(async () => (one((await scrape(gw)).families, 'keygate_cache_invalidations_total') ?? 0) > invalidationsBefore)
  t.ok(waited >= 0, 'keygate_cache_invalidations_total moves when a registry record is written')

  const before = await scrape(gw)
  const statuses = [
    (await gw.get('/api/v1/users', alice.key)).status, // cache miss
    (await gw.get(`/api/v1/users?token=${QUERY}1`, alice.key)).status, // hit
    (await gw.get('/api/v1/users', alice.key)).status, // hit
    (await gw.get('/api/v1/users')).status, // no credential: no lookup
    (await gw.get('/api/v1/users', unknown.key)).status, // miss (then a negative entry)
    (await gw.send('POST', '/api/v1/users', { Authorization: `Bearer ${alice.key}` }, '{}')).status, // hit
    (await gw.send('GET', `/nowhere-metrics?token=${QUERY}2`)).status, // no route: no lookup
    (await gw.get('/api/v2/things', alice.key)).status // hit; the upstream refuses
  ]
  t.same(statuses, [200, 200, 200, 401, 401, 403, 404, 502], 'the traffic got the expected answers')

  // onResponse runs when the response has been handed to the socket: wait until all 8 are counted
  let after: Families = before.families
  await eventually(async () => {
    after = (await scrape(gw)).families
    return sum(deltas(before.families, after, 'keygate_requests_total')) >= 8
  })
  const res = await scrape(gw)
  after = res.families

  await t.test('served without a credential, with the registry\'s content type', async (t) => {
    t.equal(res.status, 200)
    t.equal(res.contentType, 'text/plain; version=0.0.4; charset=utf-8')
    const headers = (await gw.admin('GET', '/metrics')).headers
    t.equal(headers['cache-control'], 'no-store', 'never cached')
  })

  await t.test('every family has HELP and TYPE; keygate\'s and the default process metrics are there', async (t) => {
    for (const f of after.values()) {
      t.ok(f.type !== 'untyped', `${f.name} has a TYPE`)
      t.ok((f.help ?? '') !== '', `${f.name} has a HELP text`)
    }
    for (const name of [
      'keygate_requests_total', 'keygate_request_duration_seconds', 'keygate_auth_decisions_total',
      'keygate_auth_decision_duration_seconds', 'keygate_upstream_duration_seconds', 'keygate_upstream_errors_total',
      'keygate_cache_hits_total', 'keygate_cache_misses_total', 'keygate_cache_evictions_total',
      'keygate_cache_invalidations_total', 'keygate_cache_entries', 'keygate_cache_tracking_up',
      'keygate_cache_tracking_connection_age_seconds', 'keygate_redis_up', 'keygate_redis_last_ok_timestamp_seconds',
      'keygate_redis_connection_errors_total', 'keygate_redis_lookup_errors_total',
      'process_cpu_seconds_total', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes'
    ]) t.ok(after.has(name), `${name} is exported`)
    t.equal(after.get('keygate_request_duration_seconds')?.type, 'histogram')
    t.equal(after.get('keygate_requests_total')?.type, 'counter')
    t.equal(after.get('keygate_redis_up')?.type, 'gauge')
  })

  await t.test('requests by rule, status and reason', async (t) => {
    assertDeltas(t, before.families, after, 'keygate_requests_total', [
      [{ mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx', reason: 'allowed' }, 3],
      [{ mode: 'proxy', rule: 'none', status: '401', status_class: '4xx', reason: 'missing_credential' }, 1],
      [{ mode: 'proxy', rule: 'none', status: '401', status_class: '4xx', reason: 'unknown_key' }, 1],
      [{ mode: 'proxy', rule: 'POST /api/v1/users', status: '403', status_class: '4xx', reason: 'missing_permission' }, 1],
      [{ mode: 'proxy', rule: 'none', status: '404', status_class: '4xx', reason: 'no_route' }, 1],
      [{ mode: 'proxy', rule: 'GET /api/v2/things', status: '502', status_class: '5xx', reason: 'upstream_error' }, 1]
    ])
  })

  await t.test('request latency: a histogram by rule, status and status class', async (t) => {
    const expected: Array<[Record<string, string>, number]> = [
      [{ mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx' }, 3],
      [{ mode: 'proxy', rule: 'none', status: '401', status_class: '4xx' }, 2],
      [{ mode: 'proxy', rule: 'none', status: '404', status_class: '4xx' }, 1],
      [{ mode: 'proxy', rule: 'POST /api/v1/users', status: '403', status_class: '4xx' }, 1],
      [{ mode: 'proxy', rule: 'GET /api/v2/things', status: '502', status_class: '5xx' }, 1]
    ]
    assertDeltas(t, before.families, after, 'keygate_request_duration_seconds_count', expected)
    for (const [labels] of expected) {
      t.ok((deltas(before.families, after, 'keygate_request_duration_seconds_sum').get(labelKey(labels)) ?? 0) > 0, `_sum grew for ${JSON.stringify(labels)}`)
      t.equal(one(after, 'keygate_request_duration_seconds_bucket', { ...labels, le: '+Inf' }), one(after, 'keygate_request_duration_seconds_count', labels), '+Inf bucket = _count')
    }
    t.equal(series(after, 'keygate_request_duration_seconds_bucket').size % 16, 0, 'every series has its 15 buckets and +Inf')
  })

  await t.test('auth decisions: 4 from the cache (counted), 2 that waited for Redis (timed)', async (t) => {
    assertDeltas(t, before.families, after, 'keygate_auth_decisions_total', [
      [{ source: 'cache' }, 4],
      [{ source: 'redis' }, 2]
    ])
    assertDeltas(t, before.families, after, 'keygate_auth_decision_duration_seconds_count', [[{}, 2]])
    t.ok((deltas(before.families, after, 'keygate_auth_decision_duration_seconds_sum').get('{}') ?? 0) > 0, 'the Redis round trips took time')
  })

  await t.test('cache: the repeated key is a miss, then hits; entries and tracking', async (t) => {
    assertDeltas(t, before.families, after, 'keygate_cache_hits_total', [[{}, 4]])
    assertDeltas(t, before.families, after, 'keygate_cache_misses_total', [[{}, 2]])
    assertDeltas(t, before.families, after, 'keygate_cache_evictions_total', [])
    t.ok((one(after, 'keygate_cache_entries') ?? 0) >= 4, 'alice\'s key, user and role records and the unknown key\'s negative entry are held')
    t.equal(one(after, 'keygate_cache_tracking_up'), 1, 'push invalidation is established')
    t.ok((one(after, 'keygate_cache_tracking_connection_age_seconds') ?? -1) >= 0, 'the tracking connection has an age')
  })

  await t.test('upstreams: latency of the answered ones, errors by kind', async (t) => {
    assertDeltas(t, before.families, after, 'keygate_upstream_duration_seconds_count', [[{ upstream: 'core' }, 3]])
    t.equal(one(after, 'keygate_upstream_duration_seconds_count', { upstream: 'down' }), 0, 'the refusing upstream has a series, never observed')
    assertDeltas(t, before.families, after, 'keygate_upstream_errors_total', [[{ upstream: 'down', kind: 'refused' }, 1]])
    t.equal(series(after, 'keygate_upstream_errors_total').size, 10, 'every upstream x kind from the start (2 x 5)')
  })

  await t.test('Redis: up, no errors', async (t) => {
    t.equal(one(after, 'keygate_redis_up'), 1)
    const lastOk = one(after, 'keygate_redis_last_ok_timestamp_seconds') ?? 0
    t.ok(lastOk > 1.6e9 && lastOk <= Date.now() / 1000 + 1, 'the last answer is a Unix time in seconds')
    assertDeltas(t, before.families, after, 'keygate_redis_lookup_errors_total', [])
    assertDeltas(t, before.families, after, 'keygate_redis_connection_errors_total', [])
  })

  await t.test('no key, key id, raw path or query string in any metric line', async (t) => {
    for (const secret of [alice.key, alice.id, unknown.key, unknown.id, QUERY, 'nowhere-metrics', 'Bearer', 'token=']) {
      t.notOk(res.text.includes(secret), `the exposition does not contain ${JSON.stringify(secret.slice(0, 12))}`)
    }
  })
})

t.test('upstream errors by kind: reset and timeout', async (t) => {
  const gw = await startGateway(t, {
    upstreamMode: { kind: 'reset' },
    configure: (config) => {
      const core = config.upstreams.core
      if (core === undefined) throw new Error('no upstream "core"')
      core.timeout_ms = 300
    }
  })
  const alice = await gw.fixtures.personalKey('alice')
  const before = (await scrape(gw)).families
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 502, 'reset: 502')
  gw.upstream.setMode({ kind: 'hang' })
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 504, 'past timeout_ms: 504')
  let after = before
  await eventually(async () => {
    after = (await scrape(gw)).families
    return sum(deltas(before, after, 'keygate_requests_total')) >= 2
  })
  assertDeltas(t, before, after, 'keygate_upstream_errors_total', [
    [{ upstream: 'core', kind: 'reset' }, 1],
    [{ upstream: 'core', kind: 'timeout' }, 1]
  ])
  assertDeltas(t, before, after, 'keygate_requests_total', [
    [{ mode: 'proxy', rule: 'GET /api/v1/users', status: '502', status_class: '5xx', reason: 'upstream_error' }, 1],
    [{ mode: 'proxy', rule: 'GET /api/v1/users', status: '504', status_class: '5xx', reason: 'upstream_timeout' }, 1]
  ])
  assertDeltas(t, before, after, 'keygate_upstream_duration_seconds_count', [])
})

t.test('Redis: lookup errors by kind, the up gauge and connection errors follow an outage', async (t) => {
  // its own redis-server: this test freezes, kills and restarts it
  const gw = await startGateway(t)
  const prefix = gw.config.keys.prefix
  const wrongType = generateKey(prefix)
  await gw.client.set(gw.fixtures.keys.key(wrongType.id), 'not a hash')
  const uncached = generateKey(prefix)
  const before = (await scrape(gw)).families

  t.equal((await gw.get('/api/v1/users', wrongType.key)).status, 401, 'a record of the wrong Redis type denies')
  const afterReply = (await scrape(gw)).families
  assertDeltas(t, before, afterReply, 'keygate_redis_lookup_errors_total', [[{ kind: 'reply' }, 1]])
  t.equal(one(afterReply, 'keygate_redis_up'), 1, 'an error reply is not an outage')

  gw.redis.kill('SIGSTOP')
  t.teardown(() => { gw.redis.kill('SIGCONT') })
  t.equal((await gw.get('/api/v1/users', uncached.key)).status, 503, 'frozen Redis, uncached key: 503')
  let frozen = afterReply
  const downIn = await eventually(async () => {
    frozen = (await scrape(gw)).families
    return one(frozen, 'keygate_redis_up') === 0
  }, 5000)
  t.ok(downIn >= 0, 'keygate_redis_up turns 0 (and /metrics is served while Redis is down)')
  assertDeltas(t, afterReply, frozen, 'keygate_redis_lookup_errors_total', [[{ kind: 'timeout' }, 1]])

  gw.redis.kill('SIGKILL')
  const erroredIn = await eventually(async () => (one((await scrape(gw)).families, 'keygate_redis_connection_errors_total') ?? 0) > 0, 5000)
  t.ok(erroredIn >= 0, 'failed reconnects are counted as connection errors')

  await gw.redis.restart()
  const upIn = await eventually(async () => one((await scrape(gw)).families, 'keygate_redis_up') === 1, 10_000)
  t.ok(upIn >= 0, 'keygate_redis_up is 1 again once Redis answers')
})
