/**
 * Targets of one upstream for the balancing, health-check and failover tests: real
 * node:http servers on real ports. Each answers `GET <healthPath>` with its `health`
 * status (200 by default) and every other request with 200 and its own name, after
 * reading the whole body. `kill()` stops listening and destroys every open connection
 * (as a crashed process would: refused from then on); `revive()` listens on the same
 * port again.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import type { Test } from 'tap'

export interface TargetRequest { method: string, url: string, body: string }

export interface Target {
  name: string
  url: string
  port: number
  /** requests other than health checks, in order */
  requests: TargetRequest[]
  /** health checks received */
  checks: number
  /** the status the health path answers (a function: per check) */
  health: number | ((n: number) => number)
  /** ms before a non-health request is answered */
  delayMs: number
  kill: () => Promise<void>
  revive: () => Promise<void>
}

export async function startTarget (t: Test, name: string, healthPath = '/health'): Promise<Target> {
  const sockets = new Set<Socket>()
  let server: Server
  const target: Target = {
    name,
    url: '',
    port: 0,
    requests: [],
    checks: 0,
    health: 200,
    delayMs: 0,
    kill,
    revive
  }
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.method === 'GET' && req.url === healthPath) {
        const n = target.checks++
        res.writeHead(typeof target.health === 'function' ? target.health(n) : target.health).end()
        return
      }
      const body = Buffer.concat(chunks).toString('utf8')
      target.requests.push({ method: req.method ?? '', url: req.url ?? '', body })
      const answer = (): void => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ target: name }))
      }
      if (target.delayMs > 0) setTimeout(answer, target.delayMs)
      else answer()
    })
  }
  async function listen (port: number): Promise<void> {
    server = createServer(handle)
    server.on('connection', (s: Socket) => { sockets.add(s); s.once('close', () => sockets.delete(s)) })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => { resolve() })
    })
    target.port = (server.address() as AddressInfo).port
    target.url = `http://127.0.0.1:${target.port}`
  }
  async function kill (): Promise<void> {
    const closed = new Promise<void>((resolve) => { server.close(() => { resolve() }) })
    for (const s of sockets) s.destroy()
    await closed
  }
  async function revive (): Promise<void> {
    await listen(target.port)
  }
  await listen(0)
  t.teardown(async () => { if (server.listening) await kill() })
  return target
}

/** The `keygate_upstream_target_up` value of each target of `upstream`, by target origin. */
type Gauge = { get: () => Promise<{ values: Array<{ labels: Record<string, string>, value: number }> }> } | undefined

export async function targetsUp (registry: { getSingleMetric: (name: string) => unknown },
  upstream: string): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric('keygate_upstream_target_up') as Gauge
  const out: Record<string, number> = {}
  for (const v of (await metric?.get())?.values ?? []) {
    if (v.labels.upstream === upstream) out[v.labels.target as string] = v.value
  }
  return out
}

/** Count of each target's name in the answers. */
export function tally (bodies: string[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const b of bodies) {
    const name = (JSON.parse(b) as { target: string }).target
    out[name] = (out[name] ?? 0) + 1
  }
  return out
}
