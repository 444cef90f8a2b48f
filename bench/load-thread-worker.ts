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
const latencies = targets.map(() => new Samples())
const responses = targets.map(() => 0)
const not2xx = targets.map(() => 0)
const loads = targets.map((t, i) => {
  const load = autocannon({ url: t.url, headers: t.headers, connections: t.connections, duration: 3600 })
  load.on('response', (_client, status, _bytes, ms) => {
    (latencies[i] as Samples).push(ms)
    responses[i] = (responses[i] as number) + 1
    if (status < 200 || status > 299) not2xx[i] = (not2xx[i] as number) + 1
  })
  return load
})
port.once('message', async () => {
  for (const load of loads) load.stop()
  await Promise.all(loads).then((results) => {
    port.postMessage(results.map((r, i): LoadThreadResult => {
      const sorted = (latencies[i] as Samples).sorted()
      return {
        responses: responses[i] as number,
        bad: (not2xx[i] as number) + r.errors,
        p50Ms: percentile(sorted, 50),
        p99Ms: percentile(sorted, 99)
      }
    }))
  })
})
port.postMessage('started')
