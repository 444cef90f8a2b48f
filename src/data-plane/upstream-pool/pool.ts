/**
 * An upstream with several targets: one undici `Pool` per target (its keep-alive
 * connections, TLS and timeouts are undici's), a health per target (target-health.ts)
 * fed by the active check (health-check.ts) and by the requests themselves, and the
 * choice of a target per request among those up: round robin, or `least_requests` (the
 * fewest requests in flight, ties taken in turn).
 *
 * undici's BalancedPool was weighed and not used: it has no notion of a target being
 * out (it lowers a failing pool's weight, and still sends to it), no least-requests
 * choice, and no way to send a retry to a target other than the one that failed.
 *
 * A request whose connection failed before any byte was sent (undici's
 * `connectionError` for that very error: refused, unreachable, connect timeout, TLS
 * refused) is sent once more, to another target, when its method is idempotent; its
 * body, if any, is offered through detachable-body.ts so that the first attempt cannot
 * consume it. No target up: the request fails at once with NoHealthyTarget (a 502).
 */
import type { Readable } from 'node:stream'
import type { Logger } from 'pino'
import type { Dispatcher, Pool } from 'undici'
import type { UpstreamConfig } from '../../config/schema.js'
import { parseCheckDuration, type UpstreamTls } from '../../config/upstreams.js'
import { connectOptions, originPool, type ConnectOptions } from './connect-options.js'
import { detachable } from './detachable-body.js'
import { connectionFailureLog } from './failure-log.js'
import { startHealthCheck, type HealthCheck } from './health-check.js'
import { TargetHealth } from './target-health.js'

/** No target of the upstream is up: nothing was sent. */
export class NoHealthyTarget extends Error {
  override readonly name = 'NoHealthyTarget'
  readonly code = 'KEYGATE_NO_HEALTHY_TARGET'
  constructor () { super('no healthy target') }
}
const NO_HEALTHY_TARGET = new NoHealthyTarget()

/** RFC 9110 section 9.2.2 */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'])

/** A request as the proxy makes it: everything but the origin and the Host header, which the target sets. */
export type ForwardOptions<T> = Omit<Dispatcher.RequestOptions<T>, 'origin' | 'headers'> & {
  headers: Record<string, string | string[] | undefined>
}
export type StreamCallback<T> = (err: Error | null, data: Dispatcher.StreamData<T>) => void

interface Target {
  readonly origin: string
  readonly index: number
  dispatcher: Pool
  readonly health: TargetHealth
  inflight: number
  check: HealthCheck | undefined
}

export interface UpstreamPoolOptions {
  name: string
  upstream: UpstreamConfig & { targets: string[] }
  tls: UpstreamTls
  /** one byte per target, written on every change (the `keygate_upstream_target_up` gauge) */
  states: Uint8Array | undefined
  logger: Logger
}

export class UpstreamPool {
  private readonly targets: Target[]
  private readonly leastRequests: boolean
  /** where the next round starts */
  private next = 0
  /** the errors undici reported as connection failures: a request failed with one sent nothing */
  private readonly connectErrors = new WeakSet<Error>()
  private readonly logFailure: (origin: string, err: unknown) => void
  private connect: ConnectOptions

  constructor (private readonly o: UpstreamPoolOptions) {
    const u = o.upstream
    this.leastRequests = u.balancing === 'least_requests'
    this.logFailure = connectionFailureLog(o.logger, o.name)
    this.connect = connectOptions(u, o.tls)
    const check = u.health_check
    const rules = {
      unhealthyAfter: check?.unhealthy_after ?? 1,
      healthyAfter: check?.healthy_after ?? 1,
      passiveFailures: u.passive?.failures ?? 3,
      ejectionMs: check === undefined ? parseCheckDuration(u.passive?.ejection ?? '30s') : undefined
    }
    this.targets = u.targets.map((url, index) => {
      const { origin } = new URL(url)
      const health = new TargetHealth(rules, (up, why) => { this.changed(target, up, why) })
      const dispatcher = this.dispatcherFor(origin)
      const target: Target = { origin, index, dispatcher, health, inflight: 0, check: undefined }
      return target
    })
    this.startChecks()
  }

  /** The target for the next request: up, and not `except`; undefined when there is none. */
  pick (except?: Target): Target | undefined {
    const targets = this.targets
    const n = targets.length
    let best: Target | undefined
    for (let i = 0; i < n; i++) {
      const t = targets[(this.next + i) % n] as Target
      if (!t.health.up || t === except) continue
      if (!this.leastRequests) {
        best = t
        break
      }
      if (best === undefined || t.inflight < best.inflight) best = t
    }
    if (best !== undefined) this.next = (best.index + 1) % n
    return best
  }

  /** The origin of the target a WebSocket handshake goes to, chosen as for a request. */
  pickOrigin (): string | undefined {
    return this.pick()?.origin
  }

  /** The TLS and timeout settings the targets are reached with (also for WebSocket handshakes). */
  get connectOptions (): ConnectOptions {
    return this.connect
  }

  /** Sends one request (undici's `stream`: `factory` gets the response head, `callback` the end). */
  stream<T> (opts: ForwardOptions<T>, factory: Dispatcher.StreamFactory<T>, callback: StreamCallback<T>): void {
    const target = this.pick()
    if (target === undefined) {
      const body = opts.body as Readable | undefined
      body?.destroy()
      queueMicrotask(() => { callback(NO_HEALTHY_TARGET, { opaque: opts.opaque as T, trailers: {} }) })
      return
    }
    this.attempt(target, opts, factory, callback, IDEMPOTENT.has(opts.method) && this.targets.length > 1)
  }

  private attempt<T> (target: Target, opts: ForwardOptions<T>, factory: Dispatcher.StreamFactory<T>,
    callback: StreamCallback<T>, mayRetry: boolean): void {
    const body = opts.body as Readable | undefined
    const sent = mayRetry && body !== undefined ? detachable(body) : body
    let answered = false
    target.inflight++
    target.dispatcher.stream({ ...opts, body: sent }, (data) => {
      answered = true
      target.health.responded()
      return factory(data)
    }, (err, data) => {
      target.inflight--
      if (err === null || answered) {
        callback(err, data)
        return
      }
      const beforeSending = this.connectErrors.has(err)
      if (beforeSending || isReset(err)) target.health.connectionFailed()
      if (beforeSending && mayRetry) {
        const other = this.pick(target)
        if (other !== undefined) {
          this.attempt(other, opts, factory, callback, false)
          return
        }
      }
      if (sent !== body) body?.destroy(err)
      callback(err, data)
    })
  }

  /** New TLS files (SIGHUP): new connections use them; requests in flight finish on the old ones. */
  reload (tls: UpstreamTls): void {
    this.connect = connectOptions(this.o.upstream, tls)
    for (const t of this.targets) {
      const old = t.dispatcher
      t.dispatcher = this.dispatcherFor(t.origin)
      old.close().catch(() => {})
    }
    Promise.all(this.targets.map(async (t) => await t.check?.stop())).then(() => { this.startChecks() }, () => {})
  }

  async close (): Promise<void> {
    await Promise.allSettled(this.targets.flatMap((t) => {
      t.health.stop()
      return [t.dispatcher.close(), t.check?.stop()]
    }))
  }

  private startChecks (): void {
    const check = this.o.upstream.health_check
    if (check === undefined) return
    for (const t of this.targets) {
      t.check = startHealthCheck(t.origin, check, this.connect, (passed) => { t.health.checked(passed) })
    }
  }

  private dispatcherFor (origin: string): Pool {
    return originPool(origin, this.o.upstream, this.connect, (err) => {
      this.connectErrors.add(err)
      this.logFailure(origin, err)
    })
  }

  private changed (t: Target, up: boolean, why: string): void {
    if (this.o.states !== undefined) this.o.states[t.index] = up ? 1 : 0
    const line = { upstream: this.o.name, target: t.origin, why }
    if (up) this.o.logger.info(line, 'upstream target back')
    else this.o.logger.warn(line, 'upstream target out')
  }
}

/** The connection broke before a response (undici's "other side closed", a reset). */
function isReset (err: Error): boolean {
  const code = (err as { code?: unknown }).code
  return code === 'UND_ERR_SOCKET' || code === 'ECONNRESET' || code === 'EPIPE'
}
