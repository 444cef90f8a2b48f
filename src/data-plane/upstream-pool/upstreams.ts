/**
 * Every configured upstream as something a request is sent to: an upstream with one
 * `url` is an undici `Pool` of connections to its origin, exactly the proxy's single hop
 * (not an `Agent`, a map of origins to pools looked up on every request, for an upstream
 * that has one origin); one with `targets` is a pool of targets (pool.ts). The proxy and
 * the WebSocket relay call the same three things: `stream` a request, `pickOrigin` for a
 * handshake, `connectOptions` for its TLS. SIGHUP re-reads the upstreams' TLS files
 * (`reloadTls`).
 */
import type { Logger } from 'pino'
import type { Dispatcher, Pool } from 'undici'
import type { Config, UpstreamConfig } from '../../config/schema.js'
import { readUpstreamTls, upstreamOrigins, type UpstreamTls } from '../../config/upstreams.js'
import { connectOptions, originPool, type ConnectOptions } from './connect-options.js'
import { connectionFailureLog } from './failure-log.js'
import { UpstreamPool, type ForwardOptions, type StreamCallback } from './pool.js'

export { NoHealthyTarget } from './pool.js'
export type { ForwardOptions, StreamCallback }

export interface UpstreamDispatch {
  stream: <T>(opts: ForwardOptions<T>, factory: Dispatcher.StreamFactory<T>, callback: StreamCallback<T>) => void
  pickOrigin: () => string | undefined
  readonly connectOptions: ConnectOptions
  reload: (tls: UpstreamTls) => void
  close: () => Promise<void>
}

/** One origin: the request goes to it on one pool, with nothing in between. */
class SingleOrigin implements UpstreamDispatch {
  private pool: Pool
  private connect: ConnectOptions
  private readonly origin: string

  constructor (
    private readonly upstream: UpstreamConfig,
    tls: UpstreamTls,
    private readonly logFailure: (origin: string, err: unknown) => void
  ) {
    const url = new URL(upstream.url as string)
    this.origin = url.origin
    this.connect = connectOptions(upstream, tls)
    this.pool = this.poolFor()
  }

  stream<T> (opts: ForwardOptions<T>, factory: Dispatcher.StreamFactory<T>, callback: StreamCallback<T>): void {
    this.pool.stream(opts, factory, callback)
  }

  pickOrigin (): string { return this.origin }

  get connectOptions (): ConnectOptions { return this.connect }

  reload (tls: UpstreamTls): void {
    this.connect = connectOptions(this.upstream, tls)
    const old = this.pool
    this.pool = this.poolFor()
    old.close().catch(() => {})
  }

  async close (): Promise<void> { await this.pool.close() }

  private poolFor (): Pool {
    return originPool(this.origin, this.upstream, this.connect, (err) => { this.logFailure(this.origin, err) })
  }
}

export interface Upstreams {
  get: (name: string) => UpstreamDispatch
  /** re-reads every upstream's TLS files; on any problem nothing changes and the problems are returned */
  reloadTls: () => string[]
  close: () => Promise<void>
}

export interface UpstreamsOptions {
  logger: Logger
  /** an upstream's target states, for the gauge (src/metrics/upstream-metrics.ts) */
  targetStates: (name: string) => Uint8Array | undefined
}

export function createUpstreams (config: Config, o: UpstreamsOptions): Upstreams {
  const all = new Map<string, UpstreamDispatch>()
  for (const [name, u] of Object.entries(config.upstreams)) {
    const { tls, problems } = readUpstreamTls(name, u)
    if (problems.length > 0) throw new Error(problems.join('; '))
    const states = o.targetStates(name)
    all.set(name, u.targets !== undefined
      ? new UpstreamPool({ name, upstream: { ...u, targets: u.targets }, tls, states, logger: o.logger })
      : new SingleOrigin(u, tls, connectionFailureLog(o.logger, name)))
  }
  return {
    get (name) {
      const u = all.get(name)
      if (u === undefined) throw new Error(`routes: unknown upstream ${name}`)
      return u
    },
    reloadTls () {
      const read = Object.entries(config.upstreams).map(([name, u]) => ({ name, ...readUpstreamTls(name, u) }))
      const problems = read.flatMap((r) => r.problems)
      if (problems.length > 0) return problems
      for (const r of read) all.get(r.name)?.reload(r.tls)
      return []
    },
    async close () {
      await Promise.allSettled([...all.values()].map(async (u) => { await u.close() }))
    }
  }
}

/** The origin an upstream's spans name (its url, or its first target). */
export function spanOrigin (u: UpstreamConfig): string {
  return upstreamOrigins(u)[0] ?? 'http://invalid'
}
