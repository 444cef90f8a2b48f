/**
 * What the WebSocket stage (upgrade.ts) is built from, and what it learns of one
 * upgrade as it answers it, for the next steps and the log line.
 */
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Logger } from 'pino'
import type { WebSocket } from 'ws'
import type { Tracking } from '../cache/tracking.js'
import type { Config } from '../config/schema.js'
import type { Upstreams } from '../data-plane/upstream-pool/upstreams.js'
import type { RequestDecider } from '../decision/decide-request.js'
import type { Route } from '../decision/route-table.js'
import type { Framing } from '../http/framing.js'
import type { RequestHeaderRewriter } from '../http/identity-headers.js'
import type { RequestState } from '../http/request-state.js'
import type { Metrics } from '../metrics/metrics.js'
import type { ToUpstream, Tracing } from '../tracing/request-trace.js'
import type { UsageCounter } from '../usage/counter.js'
import type { KeyRequests } from '../usage/key-requests.js'
import type { UsageRecorder } from '../usage/last-used.js'
import type { Slot } from './connections.js'
import type { UpstreamHandshake } from './upstream.js'

export interface WebSocketStageOptions {
  config: Config
  logger: Logger
  /** the decision, receive to rate limits, as for every request */
  decider: RequestDecider
  /** the same decision without the rate limits, for open connections (connections.ts) */
  redecider: RequestDecider
  /** push invalidation: what tells open connections that a record changed */
  tracking: Tracking
  framing: Framing
  /** each route's header rewriter (its key header is never forwarded either) */
  rewriterOf: (route: Route) => RequestHeaderRewriter
  /** by upstream name: the trace context sent to it, and the handshake's CLIENT span (src/tracing/) */
  toUpstreams: ReadonlyMap<string, ToUpstream>
  /** every upstream's dispatcher: the origin a handshake goes to, and its TLS settings */
  upstreams: Upstreams
  usage: UsageRecorder
  /** each key's request counts (src/usage/counter.ts) */
  counter?: UsageCounter
  /** each key's last decisions (src/usage/key-requests.ts) */
  requests?: KeyRequests | undefined
  metrics: Metrics
  /** the W3C trace context, continued or started, and the spans (src/tracing/) */
  tracing: Tracing
}

/** An upgrade being answered: what the stages learned, for the next ones and the log line. */
export interface Upgrade {
  id: string
  req: IncomingMessage
  socket: Duplex
  state: RequestState
  startedAt: number
  slot?: Slot
  upstream?: UpstreamHandshake
  upstreamSocket?: WebSocket
  upstreamHeaders: readonly string[]
  /** the route decided */
  route?: Route
  /** the 101's extra headers: the rate limit's */
  headers: Record<string, string> | undefined
  /** the log line is written (once) */
  logged: boolean
}
