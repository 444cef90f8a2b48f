// Minimal typings for the part of autocannon@8 used by the benchmark runner.
// autocannon ships no types; only the programmatic API we call is declared.
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events'

  export interface Options {
    url: string
    connections?: number
    pipelining?: number
    /** seconds */
    duration?: number
    /** a fixed number of requests instead of a duration */
    amount?: number
    /** seconds */
    timeout?: number
    method?: string
    headers?: Record<string, string>
    /** requests per second over all connections (default: as fast as they answer) */
    overallRate?: number
    /** cycled in order; a `setupRequest` is called before every send of its request */
    requests?: Array<{
      setupRequest?: (request: { headers?: Record<string, string> }) => { headers?: Record<string, string> }
    }>
  }

  export interface Histogram {
    mean: number
    stddev: number
    min: number
    max: number
    total: number
    p50: number
    p99: number
  }

  export interface Result {
    /** seconds */
    duration: number
    errors: number
    timeouts: number
    mismatches: number
    non2xx: number
    resets: number
    '2xx': number
    statusCodeStats: Record<string, { count: number }>
    requests: Histogram & { sent: number }
    /** milliseconds, 1 ms resolution */
    latency: Histogram
  }

  export interface Instance extends EventEmitter, PromiseLike<Result> {
    on (
      event: 'response',
      listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void
    ): this
    on (event: string, listener: (...args: unknown[]) => void): this
    stop (): void
  }

  export default function autocannon (options: Options): Instance
}
