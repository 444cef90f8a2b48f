/**
 * How each group of metrics registers its own on the process's Registry: counters and
 * gauges filled in `collect` callbacks at scrape time, histograms kept as tables
 * (series.ts). `registers: []`: prom-client would otherwise also register each metric
 * with its global registry.
 */
import {
  Counter, Gauge,
  type Aggregator, type CounterConfiguration, type GaugeConfiguration, type Metric, type Registry
} from 'prom-client'
import type { HistogramTable } from './series.js'

export interface Registrar {
  counter: (c: CounterConfiguration<string>) => void
  gauge: (c: GaugeConfiguration<string>) => void
  histogram: (h: HistogramTable) => HistogramTable
  /** an unlabelled counter whose value is read at scrape time */
  total: (name: string, help: string, read: () => number) => void
  /** an unlabelled gauge whose value is read at scrape time; `aggregator`: across worker processes */
  level: (name: string, help: string, aggregator: Aggregator, read: () => number) => void
}

export function registrar (registry: Registry): Registrar {
  const counter = (c: CounterConfiguration<string>): void => {
    registry.registerMetric(new Counter({ ...c, registers: [] }))
  }
  const gauge = (c: GaugeConfiguration<string>): void => { registry.registerMetric(new Gauge({ ...c, registers: [] })) }
  return {
    counter,
    gauge,
    histogram (h) {
      registry.registerMetric(h as unknown as Metric)
      return h
    },
    total (name, help, read) {
      counter({ name, help, collect () { this.reset(); this.inc(read()) } })
    },
    level (name, help, aggregator, read) {
      gauge({ name, help, aggregator, collect () { this.set(read()) } })
    }
  }
}
