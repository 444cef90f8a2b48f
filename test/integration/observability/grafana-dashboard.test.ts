/**
 * docs/grafana/keygate-dashboard.json queries only metrics that exist: every panel's
 * PromQL `expr` (and the template variable's query) is read for its metric names, and
 * each is looked up in /metrics of a real gateway that has served a few requests (so
 * that labelled series exist). A histogram's `_bucket`, `_sum` and `_count` are samples
 * of their own name in the text format, and are looked up as such.
 */
import { readFileSync } from 'node:fs'
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'
import { parsePromText } from '../../helpers/prom-text.js'

interface Target { expr: string, datasource: { uid: string } }
interface Panel { title: string, datasource: { uid: string }, targets?: Target[], fieldConfig: { defaults: { unit: string } } }
interface Variable { name: string, type: string, query: string | { query: string }, datasource?: { uid: string } }
interface Dashboard {
  __inputs?: unknown
  panels: Panel[]
  templating: { list: Variable[] }
}

const dashboard = JSON.parse(readFileSync(new URL('../../../docs/grafana/keygate-dashboard.json', import.meta.url), 'utf8')) as Dashboard

// PromQL words that are not metric names (aggregation modifiers, operators, set operators)
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan'])

/** The metric names a PromQL expression selects (functions, labels, strings and ranges removed). */
export function metricNames (expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // ranges
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists (an aggregation then reads as a call)
  const names = new Set<string>()
  for (const m of bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, name = '', call] = m
    if (call !== undefined) continue // a function call
    if (KEYWORDS.has(name.toLowerCase()) || /^\d/.test(name)) continue
    names.add(name)
  }
  return [...names]
}

t.test('the expression reader', async (t) => {
  t.same(metricNames('histogram_quantile(0.99, sum by (le, mode) (rate(x_bucket{a="b", c=~"d|e"}[$__rate_interval])))'), ['x_bucket'])
  t.same(metricNames('sum(rate(a_total[5m])) / (sum(rate(a_total[5m])) + sum(rate(b_total{x!="allowed"}[5m])))'), ['a_total', 'b_total'])
  t.same(metricNames('label_values(keygate_build_info, instance)'), ['keygate_build_info', 'instance'], 'label_values names a label as its second argument')
})

const DATASOURCE = '$' + '{datasource}'

t.test('the data source is a dashboard variable, so a provisioned file works as an imported one', async (t) => {
  t.equal(dashboard.__inputs, undefined, 'no import input (file provisioning leaves them unfilled)')
  const variable = dashboard.templating.list.find((v) => v.name === 'datasource')
  t.same([variable?.type, variable?.query], ['datasource', 'prometheus'], 'a variable listing the Prometheus data sources')
  t.ok(dashboard.panels.length >= 8)
  for (const panel of dashboard.panels) {
    t.equal(panel.datasource.uid, DATASOURCE, `${panel.title}: the variable's data source`)
    t.ok((panel.targets ?? []).length > 0, `${panel.title}: queries something`)
    for (const target of panel.targets ?? []) t.equal(target.datasource.uid, DATASOURCE, `${panel.title}: each query too`)
  }
  for (const v of dashboard.templating.list) {
    if (v.datasource !== undefined) t.equal(v.datasource.uid, DATASOURCE, `variable ${v.name}: the same data source`)
  }
})

/** What a query's values are: seconds (a histogram's quantile), a ratio of rates, a rate, or a level (a gauge). */
export function kindOf (expr: string): 'seconds' | 'ratio' | 'rate' | 'level' {
  if (expr.startsWith('histogram_quantile(')) return 'seconds'
  if (/\brate\(/.test(expr)) return /\)\s*\/\s*\(?\s*sum\(/.test(expr) ? 'ratio' : 'rate'
  return 'level'
}

const UNITS: Record<ReturnType<typeof kindOf>, string[]> = {
  seconds: ['s'],
  ratio: ['percentunit', 'short'],
  rate: ['reqps', 'ops'],
  level: ['short', 'none']
}

t.test('the query reader tells units apart', async (t) => {
  t.equal(kindOf('histogram_quantile(0.99, sum by (le) (rate(x_bucket[1m])))'), 'seconds')
  t.equal(kindOf('sum(rate(a_total[1m])) / (sum(rate(a_total[1m])) + sum(rate(b_total[1m])))'), 'ratio')
  t.equal(kindOf('sum(rate(a_sum[1m])) / sum(rate(a_count[1m]))'), 'ratio')
  t.equal(kindOf('sum by (x) (rate(a_total[1m]))'), 'rate')
  t.equal(kindOf('min by (instance) (keygate_redis_up)'), 'level')
})

t.test('each panel shows one unit: latencies never share an axis with rates or counts', async (t) => {
  for (const panel of dashboard.panels) {
    const kinds = new Set((panel.targets ?? []).map((x) => kindOf(x.expr)))
    t.equal(kinds.size, 1, `${panel.title}: one kind of value (${[...kinds].join(', ')})`)
    const [kind] = kinds
    if (kind !== undefined) t.ok(UNITS[kind].includes(panel.fieldConfig.defaults.unit), `${panel.title}: ${kind} in ${panel.fieldConfig.defaults.unit}`)
  }
})

t.test('every metric the dashboard queries is in /metrics', async (t) => {
  const gw = await startGateway(t)
  const alice = await gw.fixtures.personalKey('alice')
  // allowed (a miss, then a hit), refused without a key, refused for an unknown one: labelled series exist
  for (const key of [alice.key, alice.key, undefined, 'kg_not_a_real_key']) await gw.get('/api/v1/users', key)
  // a metered key: one request allowed, one over its quota of 1 (the quota panel's outcomes)
  const metered = await gw.fixtures.botKey('reader', 'acme')
  await gw.client.hset(gw.fixtures.keys.key(metered.id), 'quota', '1/day')
  t.same([(await gw.get('/api/v1/users', metered.key)).status, (await gw.get('/api/v1/users', metered.key)).status], [200, 429])
  const res = await gw.admin('GET', '/metrics')
  t.equal(res.status, 200)
  const families = parsePromText(res.body)
  const samples = new Set([...families.values()].flatMap((f) => f.samples.map((s) => s.name)))
  const families_ = new Set(families.keys())

  const exprs = [
    ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((x) => x.expr)),
    // label_values(<metric>, <label>): only its first argument is a metric
    ...dashboard.templating.list.flatMap((v) => {
      if (v.type !== 'query' || typeof v.query === 'string') return []
      return [/^label_values\(([^,]+),/.exec(v.query.query)?.[1] ?? v.query.query]
    })
  ]
  const quotaPanel = dashboard.panels.find((p) => (p.targets ?? []).some((x) => x.expr.includes('keygate_quota_decisions_total')))
  t.match(quotaPanel?.targets?.[0]?.expr, /^sum by \(outcome\) \(rate\(keygate_quota_decisions_total\{/, 'a panel of the quota decisions by outcome')
  const byOutcome = Object.fromEntries((families.get('keygate_quota_decisions_total')?.samples ?? []).map((s) => [s.labels['outcome'], s.value]))
  t.match(byOutcome, { allowed: 1, exceeded: 1, error_denied: 0 }, 'its series are in /metrics, one per outcome, counted')
  const names = new Set(exprs.flatMap(metricNames))
  t.ok(names.size >= 15, `the names were read (${[...names].join(', ')})`)
  for (const name of names) {
    t.ok(name.startsWith('keygate_'), `${name}: one of keygate's own`)
    // a sample of that name, or a family whose samples are all labelled and none moved yet
    t.ok(samples.has(name) || families_.has(name), `${name}: in /metrics`)
  }
})
