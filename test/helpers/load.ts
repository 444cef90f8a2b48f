/**
 * Load for the failover suites: real concurrent requests from keep-alive connections to
 * each gateway instance (undici pools), every answer recorded with the class of key it
 * carried, the instance, and when it was sent and answered, so that a suite counts the
 * answers by class and finds a wrong allow (a 200 for a key that must be refused) if one
 * happened. A failed request (no answer) is recorded with status 0.
 *
 * KEYGATE_CHAOS=full (npm run chaos) selects the full size of each suite; CI runs the
 * reduced one.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Pool } from 'undici'

export const FULL_SIZE = process.env.KEYGATE_CHAOS === 'full'

export interface Shot {
  /** a name for the class of key, e.g. `live`, `unknown`, `revoked` */
  cls: string
  key: string
  path: string
}

export interface Sample {
  cls: string
  key: string
  instance: number
  status: number
  /** Date.now() when sent and when answered */
  sent: number
  done: number
}

export interface Load {
  samples: Sample[]
  /** stops the workers and waits for the requests in flight */
  stop: () => Promise<Sample[]>
}

/** `connections` workers per instance, each sending `pick()`'s request, one at a time, until stopped. */
export function startLoad (ports: readonly number[], connections: number, pick: () => Shot): Load {
  const pools = ports.map((port) => new Pool(`http://127.0.0.1:${port}`, { connections, pipelining: 1 }))
  const samples: Sample[] = []
  const state = { running: true }
  const worker = async (instance: number): Promise<void> => {
    const pool = pools[instance] as Pool
    while (state.running) {
      const shot = pick()
      const sent = Date.now()
      let status = 0
      try {
        const headers = { authorization: `Bearer ${shot.key}` }
        const res = await pool.request({ method: 'GET', path: shot.path, headers })
        await res.body.dump()
        status = res.statusCode
      } catch {
        // no answer (a reset, a closed pool): recorded as status 0
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
      samples.push({ cls: shot.cls, key: shot.key, instance, status, sent, done: Date.now() })
    }
  }
  const workers = ports.flatMap((_p, i) => Array.from({ length: connections }, async () => await worker(i)))
  return {
    samples,
    async stop () {
      state.running = false
      await Promise.all(workers)
      await Promise.all(pools.map(async (p) => await p.close()))
      return samples
    }
  }
}

/** `status x count` of the samples, by status, as text (`200x1532 503x12`) */
export function tally (samples: readonly Sample[]): string {
  const counts = new Map<number, number>()
  for (const s of samples) counts.set(s.status, (counts.get(s.status) ?? 0) + 1)
  return [...counts].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}x${n}`).join(' ') || 'none'
}

/** the p-th percentile (nearest rank) of ascending `sorted` */
export function percentile (sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] as number
}

/** An upstream that answers every request `200 ok` and keeps nothing (a recording one would grow with the load). */
export async function startPlainUpstream (): Promise<{ url: string, close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => { res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok') })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
  }
}
