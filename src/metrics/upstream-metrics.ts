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

/** `upstreams`: the configured upstream names (`upstream` label). */
export function upstreamMetrics (r: Registrar, upstreams: readonly string[]): { meters: Map<string, UpstreamMeter>, labelSets: () => number } {
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
    help: 'Upstream requests that failed before a response, by upstream and kind: refused, reset, timeout (connect or response headers; the 504s), other.',
    labelNames: ['upstream', 'kind'],
    collect () { errors.exportTo(this) }
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
  return { meters, labelSets: () => duration.size + errors.size }
}
