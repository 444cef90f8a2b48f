// src/metrics/series.ts: the hot path's accumulators and what they hand the registry.
import t from 'tap'
import { CountTable, HistogramTable } from '../../../src/metrics/series.js'

t.test('CountTable: one label object per slot, built on first sight; counts add up', async (t) => {
  let built = 0
  const table = new CountTable((slot) => { built++; return { slot: String(slot) } })
  table.add(3)
  table.add(3, 2)
  table.add(7, 0)
  t.equal(table.size, 2)
  t.equal(built, 2, 'labels built once per slot')
  for (let i = 0; i < 1000; i++) table.add(3)
  t.equal(built, 2, 'and never again')
})

t.test('HistogramTable: le is inclusive, ms in, seconds out, buckets cumulative', async (t) => {
  const h = new HistogramTable('x_seconds', 'help', [0.001, 0.01, 0.1], (slot) => ({ s: String(slot) }))
  h.observe(0, 1) // exactly 1 ms: in le="0.001"
  h.observe(0, 1.0001) // just above: le="0.01"
  h.observe(0, 100) // le="0.1"
  h.observe(0, 5000) // above every bound: +Inf only
  h.open(1)
  const out = await h.get()
  t.equal(out.type, 'histogram')
  t.equal(out.aggregator, 'sum')
  const v = (name: string, labels: Record<string, string | number>): number | undefined =>
    out.values.find((s) => s.metricName === name && JSON.stringify(s.labels) === JSON.stringify(labels))?.value
  t.equal(v('x_seconds_bucket', { s: '0', le: 0.001 }), 1)
  t.equal(v('x_seconds_bucket', { s: '0', le: 0.01 }), 2)
  t.equal(v('x_seconds_bucket', { s: '0', le: 0.1 }), 3)
  t.equal(v('x_seconds_bucket', { s: '0', le: '+Inf' }), 4)
  t.equal(v('x_seconds_count', { s: '0' }), 4)
  t.equal(v('x_seconds_sum', { s: '0' }), (1 + 1.0001 + 100 + 5000) / 1000, 'the sum in seconds')
  t.equal(v('x_seconds_count', { s: '1' }), 0, 'an opened series is exported with zero counts')
  t.equal(out.values.length, 2 * (3 + 3), 'per series: 3 buckets, +Inf, _sum, _count')
  t.equal(h.size, 2)
  h.reset()
  t.equal((await h.get()).values.length, 0, 'reset empties it')
})

t.test('HistogramTable refuses buckets that do not ascend', async (t) => {
  t.throws(() => new HistogramTable('x', 'h', [0.1, 0.1], () => ({})), /ascend/)
  t.throws(() => new HistogramTable('x', 'h', [1, 0.5], () => ({})), /ascend/)
})
