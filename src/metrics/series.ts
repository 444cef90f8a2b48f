/**
 * The hot path's accumulators: labelled counts and histograms kept as plain numbers,
 * copied into the registry only when /metrics is scraped.
 *
 * Why not prom-client's own `inc()`/`observe()`: each call hashes its label object
 * into a string and validates it, 240 ns for a cached counter child and 340 ns for a
 * histogram child on the benchmark VM; a request records three of them. Here a series
 * is found by a small integer (its *slot*, computed by the caller from label indexes)
 * in a Map, and recording is an addition: about 7 ns. A series' label object is built
 * once, the first time its slot is seen, and never again.
 */
import type { Counter } from 'prom-client'

export type Labels = Record<string, string>

interface CountSeries {
  labels: Labels
  value: number
}

/** Counts by label set. Exported through a prom-client Counter's `collect()`. */
export class CountTable {
  private readonly series = new Map<number, CountSeries>()

  /** `labelsOf(slot)`: the label values a slot stands for (called once per slot). */
  constructor (private readonly labelsOf: (slot: number) => Labels) {}

  add (slot: number, n = 1): void {
    const s = this.series.get(slot)
    if (s !== undefined) s.value += n
    else this.series.set(slot, { labels: this.labelsOf(slot), value: n })
  }

  /** How many label sets exist (each was allocated once). */
  get size (): number {
    return this.series.size
  }

  /** Sets `counter` to these counts (from its collect callback, at scrape time). */
  exportTo (counter: Counter<string>): void {
    counter.reset()
    for (const s of this.series.values()) counter.inc(s.labels, s.value)
  }
}

interface HistogramSeries {
  labels: Labels
  /** per bucket, not cumulative; the last one is above every bound (+Inf) */
  counts: Float64Array
  /** milliseconds */
  sum: number
  count: number
}

/** A sample of prom-client's metric JSON (what Registry and AggregatorRegistry read). */
interface Sample {
  metricName: string
  labels: Record<string, string | number>
  value: number
}

/**
 * A histogram family in seconds, observed in milliseconds (what `performance.now()`
 * and fastify's `elapsedTime` give), so no division happens per observation; or, with
 * `perUnit` 1, of a plain quantity (keys written per flush) observed as it is.
 * Registered with the Registry as a metric object of its own: `get()` returns the
 * same shape as prom-client's Histogram, so text exposition and cluster aggregation
 * (AggregatorRegistry sums histograms by default) treat it alike.
 */
export class HistogramTable {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  private readonly boundsMs: Float64Array
  private readonly series = new Map<number, HistogramSeries>()

  constructor (
    readonly name: string,
    readonly help: string,
    /** upper bounds in seconds, ascending */
    private readonly bounds: readonly number[],
    private readonly labelsOf: (slot: number) => Labels,
    /** observations per unit of the family: 1000 (ms observed, seconds exported), or 1 */
    private readonly perUnit = 1000
  ) {
    for (let i = 1; i < bounds.length; i++) {
      if (!((bounds[i] as number) > (bounds[i - 1] as number))) throw new Error(`${name}: buckets must ascend`)
    }
    this.boundsMs = Float64Array.from(bounds, (b) => b * perUnit)
  }

  observe (slot: number, ms: number): void {
    let s = this.series.get(slot)
    if (s === undefined) s = this.open(slot)
    const bounds = this.boundsMs
    let i = 0
    while (i < bounds.length && ms > (bounds[i] as number)) i++
    ;(s.counts[i] as number)++
    s.sum += ms
    s.count++
  }

  /** Makes a series exist (with zero counts) before its first observation. */
  open (slot: number): HistogramSeries {
    let s = this.series.get(slot)
    if (s === undefined) {
      s = { labels: this.labelsOf(slot), counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 }
      this.series.set(slot, s)
    }
    return s
  }

  get size (): number {
    return this.series.size
  }

  reset (): void {
    this.series.clear()
  }

  async get (): Promise<{ name: string, help: string, type: 'histogram', aggregator: 'sum', values: Sample[] }> {
    const bucket = this.name + '_bucket'
    const values: Sample[] = []
    for (const s of this.series.values()) {
      let cumulative = 0
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.counts[i] as number
        values.push({ metricName: bucket, labels: { ...s.labels, le: this.bounds[i] as number }, value: cumulative })
      }
      values.push({ metricName: bucket, labels: { ...s.labels, le: '+Inf' }, value: s.count })
      values.push({ metricName: this.name + '_sum', labels: s.labels, value: s.sum / this.perUnit })
      values.push({ metricName: this.name + '_count', labels: s.labels, value: s.count })
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }
}
