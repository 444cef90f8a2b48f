// One load-generation round against one server, using autocannon in-process.
import autocannon from 'autocannon'
import { percentile, Samples } from './stats.js'

export interface LoadSettings {
  connections: number
  pipelining: number
  /** seconds */
  durationSec: number
  /** requests per second over all connections; default: as fast as the server answers */
  overallRate?: number
}

export interface RoundTarget {
  url: string
  headers: Record<string, string>
  /** headers built for each request, merged over `headers` */
  headersFor?: (() => Record<string, string>) | undefined
  /** undefined: any 2xx is expected. */
  expectedStatus?: number | undefined
}

export interface RoundResult {
  /** Completed responses per second of wall time. */
  reqPerSec: number
  responses: number
  /** Latency percentiles over every response of the round (sub-ms resolution). */
  p50Ms: number
  p99Ms: number
  /** Responses with a status other than expected (non-2xx by default). */
  unexpectedStatus: number
  /** Socket errors, including timeouts. */
  errors: number
  timeouts: number
  statusCounts: Record<string, number>
  durationSec: number
}

/** autocannon's setupRequest that sets headersFor()'s headers on each request */
export function perRequest (
  headersFor: () => Record<string, string>
): (request: { headers?: Record<string, string> }) => { headers?: Record<string, string> } {
  return (request) => ({ ...request, headers: { ...request.headers, ...headersFor() } })
}

export async function runRound (target: RoundTarget, settings: LoadSettings): Promise<RoundResult> {
  // autocannon's own histogram has 1 ms resolution; record exact latencies instead.
  const latencies = new Samples()
  const instance = autocannon({
    url: target.url,
    headers: target.headers,
    connections: settings.connections,
    pipelining: settings.pipelining,
    duration: settings.durationSec,
    ...(settings.overallRate === undefined ? {} : { overallRate: settings.overallRate }),
    ...(target.headersFor === undefined ? {} : { requests: [{ setupRequest: perRequest(target.headersFor) }] })
  })
  instance.on('response', (_client, _status, _bytes, responseTimeMs) => latencies.push(responseTimeMs))
  const result = await instance

  const statusCounts: Record<string, number> = {}
  for (const [status, { count }] of Object.entries(result.statusCodeStats)) statusCounts[status] = count
  const responses = result.requests.total
  const unexpectedStatus = target.expectedStatus === undefined
    ? result.non2xx
    : responses - (statusCounts[String(target.expectedStatus)] ?? 0)

  const sorted = latencies.sorted()
  return {
    reqPerSec: result.duration > 0 ? responses / result.duration : 0,
    responses,
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
    unexpectedStatus,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCounts,
    durationSec: result.duration
  }
}
