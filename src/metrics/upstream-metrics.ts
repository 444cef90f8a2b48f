/** Upstream requests: timed to their response headers, failures counted by kind (classify.ts). */
import { UPSTREAM_ERROR_KINDS, upstreamErrorKind } from './classify.js'
import type { Registrar } from './registrar.js'
import { REQUEST_BUCKETS } from './request-metrics.js'
import { CountTable, HistogramTable } from './series.js'

/** Recorded by the proxy (proxy.ts), one per upstream. */
export interface UpstreamMeter {
  /** `ms` from sending the request upstream to its response headers */
  response: (ms: number) => void
  /** an upstream failure before any response (counted by kind, see classify.ts) */
  error: (err: unknown) => void
}

export interface UpstreamMetrics {
  meters: Map<string, UpstreamMeter>
  /** by upstream with targets: one byte per target, 1 up, 0 out */
  states: Map<string, Uint8Array>
  labelSets: () => number
}

/**
 * `upstreams`: the configured upstream names (`upstream` label); `targets`: the targets
 * of each upstream that lists them (`target` label, the configured origin). Each
 * upstream's target states are one byte per target (1 up, 0 out), written by its pool
 * (src/data-plane/upstream-pool/) and read when /metrics is scraped.
 */
export function upstreamMetrics (r: Registrar, upstreams: readonly string[],
  targets: Readonly<Record<string, readonly string[]>> = {}): UpstreamMetrics {
  const names = [...new Set(upstreams)]
  const duration = r.histogram(new HistogramTable(
    'keygate_upstream_duration_seconds',
    'Upstream requests, from sending the request to the upstream\'s response headers, by upstream.',
    REQUEST_BUCKETS,
    (slot) => ({ upstream: names[slot] as string })
  ))
  // slot = upstream * kinds + kind
  const nKinds = UPSTREAM_ERROR_KINDS.length
  const errors = new CountTable((slot) => ({
    upstream: names[Math.floor(slot / nKinds)] as string,
    kind: UPSTREAM_ERROR_KINDS[slot % nKinds] as string
  }))
  r.counter({
    name: 'keygate_upstream_errors_total',
    help: 'Upstream requests that failed before a response, by upstream and kind: refused, reset, ' +
      'timeout (connect or response headers; the 504s), no_target (no target up), other.',
    labelNames: ['upstream', 'kind'],
    collect () { errors.exportTo(this) }
  })
  const states = new Map<string, Uint8Array>()
  for (const [name, origins] of Object.entries(targets)) states.set(name, new Uint8Array(origins.length).fill(1))
  r.gauge({
    name: 'keygate_upstream_target_up',
    help: 'Whether a target of an upstream with targets takes requests: 1 up, 0 taken out by its health check ' +
      'or by passive ejection. Across worker processes, the lowest.',
    labelNames: ['upstream', 'target'],
    aggregator: 'min',
    collect () {
      for (const [name, up] of states) {
        const origins = targets[name] ?? []
        up.forEach((v, i) => { this.set({ upstream: name, target: origins[i] as string }, v) })
      }
    }
  })
  const meters = new Map<string, UpstreamMeter>()
  names.forEach((name, u) => {
    duration.open(u)
    for (let k = 0; k < nKinds; k++) errors.add(u * nKinds + k, 0)
    meters.set(name, {
      response (ms) { duration.observe(u, ms) },
      error (err) { errors.add(u * nKinds + UPSTREAM_ERROR_KINDS.indexOf(upstreamErrorKind(err))) }
    })
  })
  return { meters, states, labelSets: () => duration.size + errors.size }
}
