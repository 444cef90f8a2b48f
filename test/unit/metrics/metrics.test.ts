// src/metrics/metrics.ts without a gateway: label values, the per-process registry,
// what a request costs in allocations after warm-up (none), cluster aggregation, and
// the cache provider read at scrape time.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { AggregatorRegistry, register as globalRegistry } from 'prom-client'
import { REASONS } from '../../../src/errors.js'
import { createMetrics, type CacheStats, type Metrics } from '../../../src/metrics/metrics.js'
import { parsePromText, valueOf } from '../../helpers/prom-text.js'

const RULES = [
  { method: 'GET', path: '/api/v1/users' },
  { method: '*', path: '/api/v1/orgs/:org/*' }
]

function build (extra: { cacheStats?: () => CacheStats, now?: () => number, redis?: { up: boolean, lastOkAt: number } } = {}): Metrics {
  return createMetrics({
    rules: RULES,
    upstreams: ['core', 'reports'],
    redis: { up: true, lastOkAt: 1_700_000_000_000 },
    defaultMetrics: false,
    ...extra
  })
}

const STATS: CacheStats = { hits: 5, misses: 2, evictions: 1, invalidations: 9, entries: 42, trackingUp: true, trackingSince: 1_000_000 }

async function text (m: Metrics): Promise<ReturnType<typeof parsePromText>> {
  return parsePromText(await m.registry.metrics())
}

t.test('labels: the rule as "<METHOD> <pattern>" or "none", the status and its class, the reason', async (t) => {
  const m = build()
  m.requests.response(0, 200, 'allowed', 3)
  m.requests.response(0, 200, 'allowed', 4)
  m.requests.response(1, 403, 'org_mismatch', 1)
  m.requests.response(undefined, 404, 'no_route', 0.2)
  m.requests.refused(431, 'header_too_large')
  const f = await text(m)
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx', reason: 'allowed' }), 2)
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'proxy', rule: '* /api/v1/orgs/:org/*', status: '403', status_class: '4xx', reason: 'org_mismatch' }), 1)
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'proxy', rule: 'none', status: '404', status_class: '4xx', reason: 'no_route' }), 1)
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'proxy', rule: 'none', status: '431', status_class: '4xx', reason: 'header_too_large' }), 1, 'refused by the parser: counted')
  t.equal(valueOf(f, 'keygate_request_duration_seconds_count', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx' }), 2)
  t.equal(valueOf(f, 'keygate_request_duration_seconds_sum', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx' }), 0.007)
  t.equal(valueOf(f, 'keygate_request_duration_seconds_count', { mode: 'proxy', rule: 'none', status: '404', status_class: '4xx' }), 1)
  t.equal(valueOf(f, 'keygate_request_duration_seconds_count', { mode: 'proxy', rule: 'none', status: '431', status_class: '4xx' }), undefined, '...but not timed')
})

t.test('the mode label: the authorizer\'s decisions and the data plane\'s requests are counted apart', async (t) => {
  const m = build()
  m.requests.response(0, 200, 'allowed', 1)
  m.decisions.response(0, 200, 'allowed', 1)
  m.decisions.response(0, 200, 'allowed', 1)
  m.decisions.response(undefined, 403, 'untrusted_peer', 1)
  m.decisions.refused(431, 'header_too_large')
  const f = await text(m)
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx', reason: 'allowed' }), 1)
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'authz', rule: 'GET /api/v1/users', status: '200', status_class: '2xx', reason: 'allowed' }), 2)
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'authz', rule: 'none', status: '403', status_class: '4xx', reason: 'untrusted_peer' }), 1)
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'authz', rule: 'none', status: '431', status_class: '4xx', reason: 'header_too_large' }), 1)
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'proxy', rule: 'none', status: '431', status_class: '4xx', reason: 'header_too_large' }), undefined)
  t.equal(valueOf(f, 'keygate_request_duration_seconds_count', { mode: 'authz', rule: 'GET /api/v1/users', status: '200', status_class: '2xx' }), 2)
  t.equal(valueOf(f, 'keygate_request_duration_seconds_count', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx' }), 1)
})

t.test('every reason keeps its own label (none collide in the slot arithmetic)', async (t) => {
  const m = build()
  for (const reason of REASONS) {
    for (const status of [200, 401, 599]) m.requests.response(1, status, reason, 1)
  }
  const f = await text(m)
  for (const reason of REASONS) {
    for (const status of ['200', '401', '599']) {
      t.equal(valueOf(f, 'keygate_requests_total', { mode: 'proxy', rule: '* /api/v1/orgs/:org/*', status, status_class: `${status[0] ?? ''}xx`, reason }), 1, `${status} ${reason}`)
    }
  }
})

t.test('after warm-up, recording allocates no label set', async (t) => {
  const m = build()
  const core = m.upstream('core')
  const one = (i: number): void => {
    m.requests.response(i % 3 === 0 ? undefined : 0, i % 2 === 0 ? 200 : 401, i % 2 === 0 ? 'allowed' : 'unknown_key', i % 7)
    if (i % 2 === 0) m.auth.fromCache()
    else m.auth.fromRedis(0.3)
    core.response(i % 5)
    if (i % 11 === 0) core.error(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))
  }
  for (let i = 0; i < 100; i++) one(i)
  const warm = m.labelSets()
  for (let i = 0; i < 100_000; i++) one(i)
  t.equal(m.labelSets(), warm, 'the same label sets, however many requests')
  m.requests.response(1, 500, 'internal_error', 1)
  t.equal(m.labelSets(), warm + 2, 'a new combination allocates its counter and histogram series, once')
})

t.test('one registry per process, never prom-client\'s global one', async (t) => {
  const a = build()
  const b = build()
  t.not(a.registry, b.registry)
  t.equal(globalRegistry.getSingleMetric('keygate_requests_total'), undefined, 'nothing in the global registry')
  a.requests.response(0, 200, 'allowed', 1)
  t.equal(valueOf(await text(b), 'keygate_requests_total', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx', reason: 'allowed' }), undefined, 'b did not see a\'s request')
})

t.test('workers\' registries aggregate (node:cluster, AggregatorRegistry): counters and histograms sum, gauges as named', async (t) => {
  const a = build({ cacheStats: () => STATS })
  const b = build({ cacheStats: () => ({ ...STATS, entries: 8, trackingUp: false }), redis: { up: false, lastOkAt: 1_600_000_000_000 } })
  a.requests.response(0, 200, 'allowed', 1)
  b.requests.response(0, 200, 'allowed', 2)
  b.requests.response(0, 200, 'allowed', 30)
  a.upstream('core').response(1)
  b.upstream('core').error(Object.assign(new Error('x'), { code: 'ECONNRESET' }))
  const merged = AggregatorRegistry.aggregate([await a.registry.getMetricsAsJSON(), await b.registry.getMetricsAsJSON()])
  const f = parsePromText(await merged.metrics())
  t.equal(valueOf(f, 'keygate_requests_total', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx', reason: 'allowed' }), 3)
  t.equal(valueOf(f, 'keygate_request_duration_seconds_count', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx' }), 3)
  t.equal(valueOf(f, 'keygate_request_duration_seconds_bucket', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx', le: '0.0025' }), 2)
  t.equal(valueOf(f, 'keygate_request_duration_seconds_sum', { mode: 'proxy', rule: 'GET /api/v1/users', status: '200', status_class: '2xx' }), 0.033)
  t.equal(valueOf(f, 'keygate_upstream_duration_seconds_count', { upstream: 'core' }), 1)
  t.equal(valueOf(f, 'keygate_upstream_errors_total', { upstream: 'core', kind: 'reset' }), 1)
  t.equal(valueOf(f, 'keygate_cache_hits_total'), 10)
  t.equal(valueOf(f, 'keygate_redis_up'), 0, 'Redis is down if any worker sees it down (min)')
  t.equal(valueOf(f, 'keygate_redis_last_ok_timestamp_seconds'), 1_600_000_000, 'the oldest last answer (min)')
  t.equal(valueOf(f, 'keygate_cache_tracking_up'), 0, 'min')
  t.equal(valueOf(f, 'keygate_cache_entries'), 50, 'entries add up (sum)')
})

t.test('the cache\'s counters are read when scraped; no provider, no cache metrics', async (t) => {
  let stats = STATS
  const m = build({ cacheStats: () => stats, now: () => 1_090_500 })
  let f = await text(m)
  t.equal(valueOf(f, 'keygate_cache_hits_total'), 5)
  t.equal(valueOf(f, 'keygate_cache_misses_total'), 2)
  t.equal(valueOf(f, 'keygate_cache_evictions_total'), 1)
  t.equal(valueOf(f, 'keygate_cache_invalidations_total'), 9)
  t.equal(valueOf(f, 'keygate_cache_entries'), 42)
  t.equal(valueOf(f, 'keygate_cache_tracking_up'), 1)
  t.equal(valueOf(f, 'keygate_cache_tracking_connection_age_seconds'), 90.5)
  stats = { ...stats, hits: 6, trackingUp: false, trackingSince: 0 }
  f = await text(m)
  t.equal(valueOf(f, 'keygate_cache_hits_total'), 6, 'read again at the next scrape')
  t.equal(valueOf(f, 'keygate_cache_tracking_up'), 0)
  t.equal(valueOf(f, 'keygate_cache_tracking_connection_age_seconds'), 0, 'no age while down')
  t.notOk([...(await text(build())).keys()].some((name) => name.startsWith('keygate_cache_')), 'without a provider: none')
})

t.test("the log's write errors and drops are read when scraped; no provider, no log metrics", async (t) => {
  const stats = { writeErrors: 0, droppedLines: 0 }
  const m = createMetrics({ rules: [], upstreams: [], redis: { up: true, lastOkAt: 0 }, defaultMetrics: false, logStats: stats })
  let f = await text(m)
  t.equal(valueOf(f, 'keygate_log_write_errors_total'), 0)
  stats.writeErrors = 1
  stats.droppedLines = 300
  f = await text(m)
  t.equal(valueOf(f, 'keygate_log_write_errors_total'), 1)
  t.equal(valueOf(f, 'keygate_log_lines_dropped_total'), 300)
  t.notOk([...(await text(build())).keys()].some((name) => name.startsWith('keygate_log_')), 'without a provider: none')
})

t.test('Redis state is read when scraped', async (t) => {
  const redis = { up: false, lastOkAt: Number.NEGATIVE_INFINITY }
  const m = createMetrics({ rules: [], upstreams: [], redis, defaultMetrics: false })
  let f = await text(m)
  t.equal(valueOf(f, 'keygate_redis_up'), 0)
  t.equal(valueOf(f, 'keygate_redis_last_ok_timestamp_seconds'), 0, 'never answered: 0')
  redis.up = true
  redis.lastOkAt = 1_700_000_000_500
  m.redis.connectionError()
  m.redis.lookupError(new Error('Command timed out'))
  f = await text(m)
  t.equal(valueOf(f, 'keygate_redis_up'), 1)
  t.equal(valueOf(f, 'keygate_redis_last_ok_timestamp_seconds'), 1_700_000_000.5)
  t.equal(valueOf(f, 'keygate_redis_connection_errors_total'), 1)
  t.equal(valueOf(f, 'keygate_redis_lookup_errors_total', { kind: 'timeout' }), 1)
  t.equal(valueOf(f, 'keygate_redis_lookup_errors_total', { kind: 'reply' }), 0, 'every kind is exported from the start')
})

t.test('default process metrics: on unless turned off, unprefixed', async (t) => {
  const on = createMetrics({ rules: [], upstreams: [], redis: { up: true, lastOkAt: 0 } })
  const names = [...(await text(on)).keys()]
  t.ok(names.includes('process_cpu_seconds_total'))
  t.ok(names.includes('nodejs_eventloop_lag_seconds'))
  t.notOk(names.some((n) => n.startsWith('keygate_process') || n.startsWith('keygate_nodejs')))
  t.notOk([...(await text(build())).keys()].includes('process_cpu_seconds_total'), 'off: none')
})

t.test('an upstream that is not configured is a programming error', async (t) => {
  t.throws(() => build().upstream('nope'), /unknown upstream nope/)
})

t.test('one status scheme: status and status_class on the counter and the histogram alike', async (t) => {
  const m = build()
  m.requests.response(0, 429, 'rate_limited', 1)
  const f = await text(m)
  const labelsOf = (family: string, sample: string): string[] => Object.keys(f.get(family)?.samples.find((s) => s.name === sample)?.labels ?? {}).sort()
  t.same(labelsOf('keygate_requests_total', 'keygate_requests_total'), ['mode', 'reason', 'rule', 'status', 'status_class'])
  t.same(labelsOf('keygate_request_duration_seconds', 'keygate_request_duration_seconds_count'), ['mode', 'rule', 'status', 'status_class'])
})

t.test('keygate_build_info: 1, labelled with the version and the Node.js version', async (t) => {
  const f = await text(build())
  const { version } = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
  t.equal(valueOf(f, 'keygate_build_info', { version, node: process.versions.node }), 1)
})

t.test('the rule label of an index, for the log line', async (t) => {
  const m = build()
  t.equal(m.requests.ruleLabel(0), 'GET /api/v1/users')
  t.equal(m.requests.ruleLabel(1), '* /api/v1/orgs/:org/*')
})
