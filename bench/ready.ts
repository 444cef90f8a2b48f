// Readiness probing: poll an HTTP URL until it answers with an accepted status.
import { get } from 'node:http'
import { setTimeout as delay } from 'node:timers/promises'

/** One GET without connection reuse; resolves with the status code. */
export async function probe (url: string, timeoutMs: number): Promise<number> {
  return await new Promise((resolve, reject) => {
    const req = get(url, { agent: false, headers: { connection: 'close' }, timeout: timeoutMs }, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    })
    req.once('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)))
    req.once('error', reject)
  })
}

export interface WaitOptions {
  /** Accept this status as "ready". Default: any HTTP response. */
  isReady?: (status: number) => boolean
  /** Give up after this long. Default 60 s (a server starting on a loaded machine takes more than 15). */
  timeoutMs?: number
  /** Abort early, e.g. because the child process already exited. */
  signal?: AbortSignal
}

export async function waitForHttp (url: string, options: WaitOptions = {}): Promise<void> {
  const isReady = options.isReady ?? (() => true)
  const deadline = Date.now() + (options.timeoutMs ?? 60_000)
  let last = 'no attempt'
  while (Date.now() < deadline) {
    options.signal?.throwIfAborted()
    try {
      const status = await probe(url, 1_000)
      if (isReady(status)) return
      last = `HTTP ${status}`
    } catch (err: unknown) {
      last = err instanceof Error ? err.message : String(err)
    }
    await delay(100)
  }
  throw new Error(`${url} not ready in time (last: ${last})`)
}
