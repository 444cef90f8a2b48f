/**
 * /metrics under `serve --workers N`: whichever worker accepts the scrape asks the
 * primary, which gathers every worker's registry with prom-client's
 * AggregatorRegistry (counters and histograms summed, each gauge combined as its
 * `aggregator` says) and sends the text back. One scrape, the whole gateway.
 */
import cluster from 'node:cluster'
import { AggregatorRegistry, type Registry, type RegistryContentType } from 'prom-client'

const REQUEST = 'keygate:metrics-request'
const RESPONSE = 'keygate:metrics-response'

interface MetricsMessage { type: string, id: number, text?: string, error?: string }

let workerListener: AggregatorRegistry<RegistryContentType> | undefined

/** In a worker: expose `registry` to the primary's aggregation. */
export function shareWithPrimary (registry: Registry): void {
  AggregatorRegistry.setRegistries([registry])
  // (constructing one is what makes prom-client answer the primary's requests in a worker)
  workerListener ??= new AggregatorRegistry()
}

let nextId = 0
const pending = new Map<number, { resolve: (text: string) => void, reject: (err: Error) => void }>()

/** In a worker: the aggregated text of every worker, from the primary. */
export async function clusterMetrics (timeoutMs = 5000): Promise<string> {
  if (pending.size === 0) process.on('message', onResponse)
  const id = nextId++
  return await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      settle(id)
      reject(new Error('the primary did not answer the metrics request'))
    }, timeoutMs)
    pending.set(id, {
      resolve: (text) => { clearTimeout(timer); resolve(text) },
      reject: (err) => { clearTimeout(timer); reject(err) }
    })
    process.send?.({ type: REQUEST, id } satisfies MetricsMessage)
  })
}

function settle (id: number): void {
  pending.delete(id)
  if (pending.size === 0) process.off('message', onResponse)
}

function onResponse (message: MetricsMessage): void {
  if (message?.type !== RESPONSE) return
  const p = pending.get(message.id)
  if (p === undefined) return
  settle(message.id)
  if (message.text !== undefined) p.resolve(message.text)
  else p.reject(new Error(message.error ?? 'aggregation failed'))
}

/** In the primary: answer workers' metrics requests with the aggregate. */
export function serveClusterMetrics (): void {
  const aggregator = new AggregatorRegistry()
  cluster.on('message', (worker, message: MetricsMessage) => {
    if (message?.type !== REQUEST) return
    aggregator.clusterMetrics().then(
      (text) => { worker.send({ type: RESPONSE, id: message.id, text } satisfies MetricsMessage) },
      (err: unknown) => {
        worker.send({ type: RESPONSE, id: message.id, error: (err as Error).message } satisfies MetricsMessage)
      }
    )
  })
}
