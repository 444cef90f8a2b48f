// Load generated on a thread of its own: autocannon against each target, in a worker
// thread, until stopped. A measurement taken in the runner's own event loop (an admin
// action's round trips, a probe's send time) is then not delayed by the load's
// responses, which autocannon would otherwise handle in that same loop.
import { Worker } from 'node:worker_threads'
import type { LoadThreadResult, LoadThreadTarget } from './load-thread-worker.js'

export type { LoadThreadResult, LoadThreadTarget }

export interface LoadThread {
  /** stops every target's load and reports each one's totals and latencies */
  stop: () => Promise<LoadThreadResult[]>
}

export async function startLoadThread (targets: readonly LoadThreadTarget[]): Promise<LoadThread> {
  const worker = new Worker(new URL('./load-thread-worker.js', import.meta.url), { workerData: targets })
  const failed = new Promise<never>((_resolve, reject) => {
    worker.once('error', reject)
    worker.once('exit', (code) => { reject(new Error(`load thread exited (${code})`)) })
  })
  const message = async <T>(): Promise<T> => await Promise.race([
    new Promise<T>((resolve) => worker.once('message', resolve)), failed
  ])
  await message<'started'>()
  return {
    stop: async () => {
      const results = message<LoadThreadResult[]>()
      worker.postMessage('stop')
      try {
        return await results
      } finally {
        await worker.terminate()
      }
    }
  }
}
