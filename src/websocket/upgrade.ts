/**
 * WebSocket pass-through on the data plane (docs/websocket.md). node hands every
 * request with `Connection: upgrade` to the server's 'upgrade' event, never to fastify;
 * this stage answers them all:
 *
 *   1. receive     framing, as for every request (431, 400, 417: framing.ts); an
 *                  Upgrade other than `websocket` (h2c...), HTTP/1.0, a body, or a
 *                  handshake ws finds malformed (method, Sec-WebSocket-Key, -Version,
 *                  -Protocol): 400, reason `bad_upgrade`
 *   2. decide      the very decision a GET to the same target gets (decide-request.ts:
 *                  path policy, route, credential, key, records, rule for GET, rate
 *                  limits): the same status, error object, challenge and reason
 *   3. caps        websocket.max_connections_per_key: 429; websocket.max_connections:
 *                  503; both with `Retry-After`                        connections.ts
 *   4. upstream    the upgrade sent to the route's upstream, with the identity headers
 *                  (identity-headers.ts, the assertion when on) and the client's
 *                  subprotocol offers; refused/unreachable: 502; too slow: 504; an
 *                  HTTP answer instead of 101 passes through          upstream.ts
 *   5. complete    only then the client's handshake: 101, the subprotocol the upstream
 *                  chose, X-Request-Id
 *   6. relay       messages both ways, with backpressure; closes propagate   relay.ts
 *   7. keep deciding   a change to the key, its user, its role or its org decides the
 *                  connection again: refused now, both sides get 1008     connections.ts
 *
 * Every upgrade carries a W3C trace context, as every request does: its trace id is on
 * the log line and in the `traceparent` the upstream gets, and with spans exported, the
 * upgrade is one SERVER span (mode `websocket`) with a CLIENT span for the upstream's
 * handshake (src/tracing/).
 *
 * One log line per upgrade (`mode: "websocket"`, request-log.ts) with the decision's
 * reason and the status sent (101 when upgraded), and the request metrics with
 * `mode="websocket"`; one more line (`websocket closed`) when the connection ends.
 * Every refusal is written on the socket before it closes: no upgrade happens.
 */
import type { FastifyInstance } from 'fastify'
import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { WebSocketServer, type ServerOptions, type VerifyClientCallbackAsync, type WebSocket } from 'ws'
import { cacheTimings } from '../cache/timings.js'
import type { UpstreamConfig } from '../config/schema.js'
import type { ErrorCode, Reason } from '../errors.js'
import type { TargetVerdict } from '../decision/decide-request.js'
import { clientAddressOf } from '../http/peers.js'
import { createRequestLog } from '../http/request-log.js'
import { loggedTarget, noteVerdict, requestState } from '../http/request-state.js'
import { routePatterns, type Route } from '../decision/route-table.js'
import { challenges } from '../decision/challenges.js'
import { renderVerdict, type VerdictSink } from '../http/verdict.js'
import { Connections, type Slot } from './connections.js'
import { credentialOf, isWebSocketUpgrade, offeredProtocols } from './handshake.js'
import { relay } from './relay.js'
import { CAP_RETRY_AFTER_S, OWN_101_HEADERS, passUpstreamAnswer, refuseUpgrade, responseHeaders } from './respond.js'
import { handshakeHeaders } from './handshake-headers.js'
import { openUpstream, upstreamFor } from './upstream.js'
import type { Upgrade, WebSocketStageOptions } from './upgrade-options.js'

export function registerWebSockets (app: FastifyInstance, o: WebSocketStageOptions): Connections | undefined {
  const { config, metrics, counter, requests } = o
  const ws = config.websocket
  // off: node hands an upgrade request to fastify like any other, and its Upgrade and
  // Connection headers, hop-by-hop, are never forwarded
  if (!ws.enabled) return undefined
  const requestLog = createRequestLog(o.logger, // (every upgrade's line is written, unsampled)
    { meter: metrics.upgrades, keys: config.keys, mode: 'websocket', usage: counter, requests })
  const clientAddress = clientAddressOf(config.trusted_proxies)
  const connections = new Connections({
    maxTotal: ws.max_connections,
    maxPerKey: ws.max_connections_per_key,
    decider: o.redecider,
    tracking: o.tracking,
    sweepEveryMs: cacheTimings(config.cache).sweepEveryMs,
    meter: metrics.webSockets,
    logger: o.logger,
    closeTimeoutMs: ws.close_timeout_ms
  })
  const upgrades = new WeakMap<IncomingMessage, Upgrade>()
  const finishSpans = o.tracing.finisher('websocket')

  const serverOptions: ServerOptions & { closeTimeout: number } = {
    noServer: true,
    clientTracking: false,
    perMessageDeflate: false,
    maxPayload: ws.max_message_bytes,
    autoPong: false,
    closeTimeout: ws.close_timeout_ms,
    // 2-5 run once ws found the handshake well-formed
    verifyClient: ((info, done) => { decide(upgrades.get(info.req), done) }) satisfies VerifyClientCallbackAsync,
    // the subprotocol the upstream chose (ws checked it was among the client's offers)
    handleProtocols: (_offers, req) => upgrades.get(req)?.upstreamSocket?.protocol || false
  }
  const wss = new WebSocketServer(serverOptions)
  // a malformed handshake: the gateway's 400, not ws's own page
  wss.on('wsClientError', (_err, socket, req) => {
    const u = upgrades.get(req)
    if (u !== undefined) refuse(u, 'bad_request', 'bad_upgrade')
    else socket.destroy()
  })
  // the 101: X-Request-Id, the rate limit's headers, and the upstream's own headers of its 101
  wss.on('headers', (lines, req) => {
    const u = upgrades.get(req)
    if (u === undefined) return
    const own = [...OWN_101_HEADERS, ...Object.keys(u.headers ?? {})]
    for (const [name, value] of responseHeaders(u.upstreamHeaders, own)) lines.push(`${name}: ${value}`)
    for (const name in u.headers) lines.push(`${name}: ${u.headers[name] as string}`)
    lines.push(`X-Request-Id: ${u.id}`)
  })

  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const u: Upgrade = {
      id: randomUUID(),
      req,
      socket,
      state: requestState(loggedTarget(req.url ?? ''), '', o.tracing.receive(req.rawHeaders)),
      startedAt: performance.now(),
      upstreamHeaders: [],
      headers: undefined,
      logged: false
    }
    u.state.clientIp = clientAddress(req.socket, req.rawHeaders)
    // (a client that resets while the upgrade is decided)
    socket.on('error', () => {})
    // 1. receive
    const problem = o.framing.problem(req)
    if (problem !== undefined) {
      refuse(u, problem[0], problem[1])
      return
    }
    if (!isWebSocketUpgrade(req)) {
      refuse(u, 'bad_request', 'bad_upgrade')
      return
    }
    upgrades.set(req, u)
    // ws checks the handshake, then calls verifyClient (2-5), then completes it
    wss.handleUpgrade(req, socket, head, (client) => { opened(u, client) })
  })

  // shutdown: every connection gets 1001 before the listener closes
  app.addHook('preClose', async () => { await connections.shutdown() })
  app.addHook('onClose', (_app, done) => { requestLog.flush(); done() })

  /** 2-4, then `done(true)` has ws complete the client's handshake (5). */
  function decide (u: Upgrade | undefined, done: (ok: boolean) => void): void {
    if (u === undefined) return
    // (a bug, never a client's doing: logged, 500, and the slot freed)
    const failed = (err: unknown): void => {
      o.logger.error({ req_id: u.id, err: { message: (err as Error).message, stack: (err as Error).stack } },
        'websocket: upgrade failed')
      if (u.slot !== undefined) connections.release(u.slot)
      u.upstream?.abort()
      u.upstreamSocket?.terminate()
      refuse(u, 'internal_error', 'internal_error')
    }
    try {
      const verdict = o.decider.decideTarget('GET', u.req.url ?? '', u.req.rawHeaders, u.state.clientIp, Date.now(),
        u.req.headers.host)
      if (!(verdict instanceof Promise)) admit(u, verdict, done, failed)
      else verdict.then((v) => { admit(u, v, done, failed) }).catch(failed)
    } catch (err: unknown) {
      failed(err)
    }
  }

  function admit (u: Upgrade, v: TargetVerdict, done: (ok: boolean) => void, failed: (err: unknown) => void): void {
    const { state } = u
    noteVerdict(state, v)
    if (v.target !== undefined) state.trace.route = routePatterns(v.target.route.prefix)[1]
    if (!v.ok) state.path = v.target !== undefined ? v.target.path : v.path ?? state.path
    // the response a GET would get, on the raw socket (src/http/verdict.ts)
    if (!renderVerdict(v, onSocket, u) || !v.ok) return
    // a public rule opens no WebSocket without a key (docs/routing.md)
    if (v.identity === undefined) {
      state.anonymous = false
      onSocket.refuse(u, 'unauthorized', 'missing_credential', challenges.none)
      return
    }
    state.path = v.target.path
    state.query = v.target.query
    state.forwardPath = v.target.route.rewrite?.(v.target.path)
    u.route = v.target.route
    const chosen = upstreamFor(config.upstreams, v.target.route, v.identity)
    if (chosen === undefined) return refuse(u, 'forbidden', 'test_key_not_allowed', u.headers)

    // 3. the caps
    const credential = credentialOf(u.req.rawHeaders, v.target.route.keyHeader)
    const slot = connections.admit(u.id, v.target.path, credential, v.identity, v.rule.index, u.state.clientIp, u.route)
    if (slot === 'over_key') {
      refuse(u, 'rate_limited', 'websocket_key_limit', { ...u.headers, 'Retry-After': CAP_RETRY_AFTER_S })
      return
    }
    if (slot === 'over_total') {
      refuse(u, 'service_unavailable', 'websocket_limit', { ...u.headers, 'Retry-After': CAP_RETRY_AFTER_S })
      return
    }
    u.slot = slot
    o.usage.record(v.identity.keyId, Date.now())
    connectUpstream(u, slot, chosen[0], chosen[1], done, failed)
  }

  /** 4. the upstream's handshake; the client's completes only once it switched protocols. */
  function connectUpstream (
    u: Upgrade, slot: Slot, name: string, upstreamConfig: UpstreamConfig,
    done: (ok: boolean) => void, failed: (err: unknown) => void
  ): void {
    const meter = metrics.upstream(name)
    const headers = handshakeHeaders(u, o.rewriterOf(u.route as Route), o.toUpstreams.get(name))

    const sentAt = performance.now()
    const dispatch = o.upstreams.get(name)
    const handshake = openUpstream({
      upstream: upstreamConfig,
      origin: dispatch.pickOrigin(),
      tls: dispatch.connectOptions,
      target: (u.state.forwardPath ?? u.state.path) + u.state.query,
      headers,
      protocols: offeredProtocols(u.req),
      maxPayload: ws.max_message_bytes,
      closeTimeoutMs: ws.close_timeout_ms
    })
    u.upstream = handshake
    const gone = (): void => { handshake.abort() }
    u.socket.once('close', gone)
    handshake.outcome.then((outcome) => {
      u.socket.off('close', gone)
      if (u.socket.destroyed) {
        // the client left while the upstream answered: nothing to answer, nothing to log
        if (outcome.kind === 'open') outcome.socket.terminate()
        connections.release(slot)
        return
      }
      switch (outcome.kind) {
        case 'open':
          u.state.trace.answeredAt = performance.now()
          meter.response(u.state.trace.answeredAt - sentAt)
          u.upstreamSocket = outcome.socket
          u.upstreamHeaders = outcome.rawHeaders
          done(true)
          // (ws completes synchronously; a client whose socket ended meanwhile was dropped by it)
          if (!u.logged) {
            outcome.socket.close(1001, 'client went away')
            connections.release(slot)
          }
          return
        case 'answer':
          u.state.trace.answeredAt = performance.now()
          meter.response(u.state.trace.answeredAt - sentAt)
          connections.release(slot)
          u.state.reason = 'allowed'
          log(u, passUpstreamAnswer(u.socket, outcome.status, outcome.rawHeaders, outcome.body, u.id, u.headers))
          return
        case 'timeout':
          meter.error(outcome.error)
          connections.release(slot)
          refuse(u, 'gateway_timeout', 'upstream_timeout', u.headers)
          return
        case 'error':
          meter.error(outcome.error)
          connections.release(slot)
          refuse(u, 'bad_gateway', 'upstream_error', u.headers)
      }
    }).catch(failed)
  }

  /** 5-7. Both sides are open: relay, and keep the connection's decision current. */
  function opened (u: Upgrade, client: WebSocket): void {
    const upstream = u.upstreamSocket as WebSocket
    const slot = u.slot as Slot
    u.state.reason = 'allowed'
    log(u, 101)
    connections.opened(slot, relay(client, upstream, ws.max_buffered_bytes))
  }

  /** A verdict's response on the upgrade's socket: the rate limit's headers kept for the 101 as for a refusal. */
  const onSocket: VerdictSink<Upgrade> = {
    rateLimit (u, headers) { u.headers = headers },
    refuse (u, code, reason, challenge) {
      const headers: Record<string, string> = { ...u.headers }
      if (challenge !== undefined) headers['WWW-Authenticate'] = challenge
      refuse(u, code, reason, headers)
    }
  }

  function refuse (u: Upgrade, code: ErrorCode, reason: Reason, headers?: Record<string, string>): void {
    u.state.reason = reason
    log(u, refuseUpgrade(u.socket, code, u.id, headers))
  }

  function log (u: Upgrade, status: number): void {
    if (u.logged) return
    u.logged = true
    const request = { id: u.id, method: u.req.method ?? 'GET', kg: u.state }
    requestLog.hook(request, { statusCode: status, elapsedTime: performance.now() - u.startedAt }, noop)
    finishSpans?.(request, { statusCode: status }, noop)
  }

  return connections
}

function noop (): void {}
