// The body of bench/load-thread.ts's worker: one autocannon per target, started at once,
// stopped on the parent's 'stop'; latencies recorded exactly (autocannon's own histogram
// has 1 ms resolution), responses counted here (in a worker thread autocannon reports its
// raw counters, not the totals it gives on the main thread).
import { parentPort, workerData } from 'node:worker_threads'
import autocannon from 'autocannon'
import { percentile, Samples } from './stats.js'

export interface LoadThreadTarget {
  url: string
  headers: Record<string, string>
  connections: number
}

export interface LoadThreadResult {
  responses: number
  /** responses not 2xx, and socket errors */
  bad: number
  p50Ms: number
  p99Ms: number
}

const port = parentPort
if (port === null) throw new Error('load-thread-worker runs in a worker thread')
const targets = workerData as LoadThreadTarget[]
// (each target's responses: their latencies, and how many were not 2xx)
const loads = targets.map((t) => {
  const seen = { latencies: new Samples(), not2xx: 0 }
  const load = autocannon({ url: t.url, headers: t.headers, connections: t.connections, duration: 3600 })
  load.on('response', (_client, status, _bytes, ms) => {
    seen.latencies.push(ms)
    if (status < 200 || status > 299) seen.not2xx++
  })
  return { load, seen }
})
port.once('message', async () => {
  for (const { load } of loads) load.stop()
  const results = await Promise.all(loads.map(async ({ load, seen }) => ({ errors: (await load).errors, seen })))
  port.postMessage(results.map(({ errors, seen }): LoadThreadResult => {
    const sorted = seen.latencies.sorted()
    return {
      responses: sorted.length,
      bad: seen.not2xx + errors,
      p50Ms: percentile(sorted, 50),
      p99Ms: percentile(sorted, 99)
    }
  }))
})
port.postMessage('started')
