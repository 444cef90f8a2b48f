/**
 * The gRPC authorizer listener (`authz_grpc_listen`; off unless set): Envoy's
 * `envoy.service.auth.v3.Authorization/Check` (the `ext_authz` filter's gRPC service),
 * and the gRPC health service `grpc.health.v1.Health`, over HTTP/2 (TLS with
 * `authz_grpc.tls`). docs/authorizer-grpc.md has Envoy's configuration.
 *
 *   1. the peer       only authz.trusted_peers may ask: 403 / PERMISSION_DENIED
 *   2. the original   method, target, headers, host and client of the
 *                     CheckRequest (decoded by check-codec.ts): 400 / 431   check-request.ts
 *   3. the decision   the HTTP authorizer's: decideTarget, the same cache and rate limits
 *                                                            src/decision/decide-request.ts
 *   4. the answer     allowed: the HTTP authorizer's allowed answer
 *                     (src/authorizer/allowed-answer.ts) as `ok_response`; refused: the
 *                     HTTP status, error object and headers as `denied_response`, with
 *                     the gRPC status for it (a registry outage: UNAVAILABLE)   check-response.ts
 *   5. log            one line (`mode: "authz"`, `via: "envoy-grpc"`), the same metrics
 *                     and spans (a `traceparent` in the request's headers continues the trace)
 *
 * The health service answers SERVING while Redis answers (as /readyz), NOT_SERVING
 * otherwise and once the listener stops, for the service `""` and for the Authorization
 * service's name.
 */
import { Server, ServerCredentials, setLogger, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js'
import { HealthImplementation, type ServingStatus } from 'grpc-health-check'
import { randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { format } from 'node:util'
import type { Logger } from 'pino'
import type { Assertions } from '../assertion/index.js'
import { allowedAnswer } from '../authorizer/allowed-answer.js'
import { splitHostPort } from '../config/addresses.js'
import type { Config } from '../config/schema.js'
import { challenges } from '../decision/challenges.js'
import type { RequestDecider, TargetVerdict } from '../decision/decide-request.js'
import { routePatterns } from '../decision/route-table.js'
import type { ErrorCode, Reason } from '../errors.js'
import { addressPeer } from '../http/peers.js'
import { createRequestLog } from '../http/request-log.js'
import { loggedTarget, noteVerdict, requestState } from '../http/request-state.js'
import { renderVerdict, type VerdictSink } from '../http/verdict.js'
import type { Metrics } from '../metrics/metrics.js'
import { createRedactor } from '../redact.js'
import { keyPrefixesOf } from '../registry/key-format.js'
import type { RedisHealth } from '../registry/redis-client.js'
import type { Tracing } from '../tracing/request-trace.js'
import type { UsageCounter } from '../usage/counter.js'
import type { KeyRequests } from '../usage/key-requests.js'
import type { UsageRecorder } from '../usage/last-used.js'
import { originalCheck, sourceAddress } from './check-request.js'
import { leanAuthorizationService } from './check-codec.js'
import { deniedResponse, okResponse } from './check-response.js'
import { AUTHORIZATION_SERVICE, type CheckRequest, type CheckResponse } from './envoy-protos.js'

export interface GrpcAuthorizerOptions {
  config: Config
  logger: Logger
  decider: RequestDecider
  usage: UsageRecorder
  counter?: UsageCounter | undefined
  requests?: KeyRequests | undefined
  metrics: Metrics
  assertions?: Assertions | undefined
  tracing: Tracing
  /** Redis's health: the health service's status */
  health: RedisHealth
}

export interface GrpcAuthorizer {
  readonly server: Server
  /** binds `host:port`; the port bound (`:0` picks one) */
  listen: (hostPort: string) => Promise<number>
  /** NOT_SERVING, then no new call; the calls in flight are answered */
  close: () => Promise<void>
}

/** how long a stop waits for the calls in flight before it cancels them (each decision takes milliseconds) */
const CLOSE_GRACE_MS = 2000

type Call = ServerUnaryCall<CheckRequest, CheckResponse>
type Respond = sendUnaryData<CheckResponse>

/** a refusal's headers (WWW-Authenticate, RateLimit-*), gathered while a verdict is rendered */
interface Refusal { headers: Record<string, string>, code?: ErrorCode }
const REFUSAL: VerdictSink<Refusal> = {
  rateLimit (to, headers) { Object.assign(to.headers, headers) },
  refuse (to, code, _reason, challenge) {
    to.code = code
    if (challenge !== undefined) to.headers['www-authenticate'] = challenge
  }
}

export async function buildGrpcAuthorizer (o: GrpcAuthorizerOptions): Promise<GrpcAuthorizer> {
  const { config, decider, usage, tracing } = o
  const credentials = await credentialsOf(config.authz_grpc.tls)
  // grpc-js's own messages (a bind that failed...) as log lines, not bare stderr; redacted like any text
  const redact = createRedactor(keyPrefixesOf(config.keys))
  const grpcLog = (...args: unknown[]): void => {
    o.logger.warn({ detail: redact.text(format(...args)).slice(0, 1000) }, 'grpc-js')
  }
  setLogger({ error: grpcLog, info: grpcLog, debug: grpcLog })
  const peerAt = addressPeer(config.authz.trusted_peers)
  const writeAllowed = allowedAnswer({ headerPrefix: config.identity.header_prefix, assertions: o.assertions, tracing })
  const requestLog = createRequestLog(o.logger, {
    meter: o.metrics.decisions,
    keys: config.keys,
    mode: 'authz',
    usage: o.counter,
    requests: o.requests,
    allowedSampleRatio: config.log.allowed_sample_ratio
  })
  const finishSpans = tracing.finisher('authz')
  const byHost = config.routes.some((r) => r.hosts !== undefined)
  const routeNames = new Map(config.routes.map((r) => [r.prefix, routePatterns(r.prefix)[1]]))

  function check (call: Call, respond: Respond): void {
    const startedAt = performance.now()
    const id = randomUUID()
    const original = originalCheck(call.request, config.limits)
    const state = requestState(loggedTarget(original.target), '', tracing.receive(original.rawHeaders))
    state.via = 'envoy-grpc'
    // 1. only a trusted proxy may ask; the client is the one it reports
    const connection = peerAt(peerAddress(call.getPeer()))
    const client = connection.trusted ? sourceAddress(call.request) ?? connection.peer : connection.peer
    state.clientIp = client
    let answered = false
    const done = (status: number, response: CheckResponse): void => {
      if (answered) return
      answered = true
      // the HTTP/2 request's own method, until the original's is known
      const request = { id, method: state.method ?? 'POST', kg: state }
      requestLog.hook(request, { statusCode: status, elapsedTime: performance.now() - startedAt }, noop)
      finishSpans?.(request, { statusCode: status }, noop)
      respond(null, response)
    }
    const refuse = (code: ErrorCode, reason: Reason, headers: Record<string, string> = {}): void => {
      state.reason = reason
      const response = deniedResponse(code, id, headers)
      done(response.denied_response?.status.code ?? 500, response)
    }
    if (!connection.trusted) {
      refuse('forbidden', 'untrusted_peer', { 'www-authenticate': challenges.insufficientScope() })
      return
    }
    // 2. the original request
    if (!original.ok) {
      refuse(original.code, original.reason)
      return
    }
    state.method = original.method
    // 3. the decision, as the HTTP authorizer and the data plane take it
    try {
      const now = Date.now()
      const host = byHost ? original.host : undefined
      const verdict = decider.decideTarget(original.method, original.target, original.rawHeaders, client, now, host)
      if (!(verdict instanceof Promise)) {
        answer(verdict, now)
        return
      }
      verdict.then((v) => { answer(v, Date.now()) }).catch(failed)
    } catch (err: unknown) {
      failed(err)
    }

    // 4. the answer
    function answer (v: TargetVerdict, now: number): void {
      if (v.target !== undefined) {
        state.path = v.target.path
        state.trace.route = routeNames.get(v.target.route.prefix)
      }
      noteVerdict(state, v)
      const refusal: Refusal = { headers: {} }
      if (!renderVerdict(v, REFUSAL, refusal)) {
        refuse(refusal.code ?? v.code, v.reason, refusal.headers)
        return
      }
      const identity = v.identity
      if (identity === undefined) state.reason = 'public'
      else {
        state.reason = 'allowed'
        usage.record(identity.keyId, now)
      }
      const target = original.ok ? original.target : ''
      const keyHeader = v.target?.route.keyHeader
      const allowed = writeAllowed(identity, id, state.trace, state.method ?? 'GET', target, now, keyHeader)
      const limited = Object.keys(refusal.headers).length === 0 ? undefined : refusal.headers
      done(allowed.status, okResponse(allowed, limited))
    }

    function failed (err: unknown): void {
      o.logger.error({ req_id: id, err: { message: err instanceof Error ? err.message : String(err) } },
        'authz-grpc: internal error')
      refuse('internal_error', 'internal_error')
    }
  }

  // (channelz stays on: with it off, grpc-js 1.14's forceShutdown does not reach the open
  // sessions, and a health Watch stream would outlive the stop)
  const server = new Server({ 'grpc.max_receive_message_length': 4 * config.limits.header_bytes + 65_536 })
  server.addService(leanAuthorizationService(), { Check: check })
  // the health service: SERVING while Redis answers
  const health = new HealthImplementation()
  const setHealth = (status: ServingStatus): void => {
    health.setStatus('', status)
    health.setStatus(AUTHORIZATION_SERVICE, status)
  }
  setHealth(o.health.up ? 'SERVING' : 'NOT_SERVING')
  let closing = false
  o.health.onChange((up) => { if (!closing) setHealth(up ? 'SERVING' : 'NOT_SERVING') })
  health.addToServer(server)

  return {
    server,
    listen: async (hostPort) => {
      const { host, port } = splitHostPort(hostPort)
      const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`
      return await new Promise<number>((resolve, reject) => {
        server.bindAsync(address, credentials, (err, bound) => { if (err !== null) reject(err); else resolve(bound) })
      })
    },
    close: async () => {
      closing = true
      setHealth('NOT_SERVING')
      // the decisions in flight are answered; a health Watch stream never ends by itself,
      // so what is still open after the grace is cancelled
      await new Promise<void>((resolve) => {
        const grace = Math.min(config.shutdown_grace_ms, CLOSE_GRACE_MS)
        const force = setTimeout(() => { server.forceShutdown(); resolve() }, grace)
        server.tryShutdown(() => { clearTimeout(force); resolve() })
      })
      requestLog.flush()
    }
  }
}

/**
 * grpc-js's peer: `<address>:<port>` (an IPv6 address unbracketed) for every TCP
 * connection, whose port is always there: the address is what comes before the last `:`
 */
function peerAddress (peer: string): string {
  const colon = peer.lastIndexOf(':')
  return colon === -1 ? peer : peer.slice(0, colon)
}

async function credentialsOf (tls: Config['authz_grpc']['tls']): Promise<ServerCredentials> {
  if (tls === undefined) return ServerCredentials.createInsecure()
  const read = async (field: string, file: string): Promise<Buffer> => await readFile(file).catch((err: unknown) => {
    throw new Error(`authz_grpc.tls.${field}: cannot read ${file}: ${(err as Error).message}`)
  })
  const [cert, key, ca] = await Promise.all([
    read('cert_file', tls.cert_file),
    read('key_file', tls.key_file),
    tls.client_ca_file === undefined ? undefined : read('client_ca_file', tls.client_ca_file)
  ])
  return ServerCredentials.createSsl(ca ?? null, [{ cert_chain: cert, private_key: key }], ca !== undefined)
}

function noop (): void {}
