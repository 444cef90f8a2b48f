/**
 * The one way keygate builds a listener (the data plane, the authorizer, the admin
 * plane): fastify without its own logger or request logging (each listener writes its own
 * log line, and fastify's would carry the query string), the gateway's own request ids, the head's
 * limits and node's parser errors answered with the catalogue (framing.ts), the request
 * state (request-state.ts), and the shared not-found and error answers. With `log`, one
 * line per request and its metrics (request-log.ts); with `tracing`, the spans.
 */
import Fastify, {
  LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyServerOptions
} from 'fastify'
import { randomUUID } from 'node:crypto'
import type { Logger } from 'pino'
import type { Config } from '../config/schema.js'
import { codeForStatus, sendError, type Reason } from '../errors.js'
import type { Mode } from '../metrics/request-metrics.js'
import type { Tracing } from '../tracing/request-trace.js'
import { deny } from './deny.js'
import { checkFraming, headLimits, onClientError, type Framing } from './framing.js'
import { PROXIED_METHODS } from './methods.js'
import { createRequestLog, type RequestLogOptions } from './request-log.js'

export interface ListenerOptions {
  logger: Logger
  limits: Config['limits']
  /** told of each request node's parser refuses (metrics) */
  refused?: (status: number, reason: Reason) => void
  /** every method node's parser knows is routable (the data plane and the authorizer) */
  allMethods?: boolean
  /** this listener's own fastify options */
  fastify?: Pick<FastifyServerOptions, 'rewriteUrl' | 'routerOptions' | 'bodyLimit' | 'return503OnClosing'>
  /** one line per request, its metrics, its key's usage count and request log record (request-log.ts) */
  log?: RequestLogOptions
  /** the spans of each request (src/tracing/) */
  tracing?: { tracing: Tracing, mode: Mode }
  /** an error that has a refusal of its own (the data plane's body limit); undefined: the shared answer */
  ownRefusal?: (err: FastifyError, reply: FastifyReply) => FastifyReply | undefined
}

export interface Listener {
  app: FastifyInstance
  /** the framing check of each request (framing.ts) */
  framing: Framing
}

export function createListener (o: ListenerOptions): Listener {
  const { logger } = o
  const app = Fastify({
    logger: false,
    // (and so fastify's own request logging is off: it would build its two log objects
    // per request for a logger that drops them)
    logController: new LogController({ disableRequestLogging: true }),
    // request ids are the gateway's own; a client cannot choose what lands in the logs
    requestIdHeader: false,
    genReqId: () => randomUUID(),
    http: headLimits(o.limits),
    clientErrorHandler: onClientError(logger, o.refused),
    // what the router refuses before any route or hook (a path parameter over its
    // maxParamLength, a malformed escape in one): fastify's own answer would echo the
    // path, and a key with it; the catalogue's 400 instead, with a request id and a log line
    frameworkErrors: (err, request, reply) => {
      reply.header('x-request-id', request.id)
      logger.info({ req_id: request.id, method: request.method, status: 400, reason: 'bad_request', detail: err.code },
        'request refused by the router')
      o.refused?.(400, 'bad_request')
      // (no request state: the request met no hook)
      return sendError(reply, 'bad_request')
    },
    ...o.fastify
  })
  if (o.allMethods === true) {
    for (const method of PROXIED_METHODS) {
      if (!app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true })
    }
  }
  app.decorateRequest('kg', null as unknown as never)
  const framing = checkFraming(app.server, o.limits)

  if (o.log !== undefined) {
    const requestLog = createRequestLog(logger, o.log)
    app.addHook('onResponse', requestLog.hook)
    if (o.tracing !== undefined) addSpans(app, o.tracing)
    app.addHook('onClose', (_app, done) => { requestLog.flush(); done() })
  } else if (o.tracing !== undefined) {
    addSpans(app, o.tracing)
  }

  app.setNotFoundHandler((_request, reply) => deny(reply, 'not_found', 'no_route'))
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const own = o.ownRefusal?.(err, reply)
    if (own !== undefined) return own
    const status = err.statusCode ?? 500
    if (status >= 400 && status < 500) return deny(reply, codeForStatus(status), 'bad_request')
    logger.error(
      { req_id: request.id, err: { type: err.name, message: err.message, stack: err.stack } }, 'internal error'
    )
    return deny(reply, codeForStatus(status), 'internal_error')
  })
  return { app, framing }
}

function addSpans (app: FastifyInstance, { tracing, mode }: { tracing: Tracing, mode: Mode }): void {
  const finishSpans = tracing.finisher(mode)
  if (finishSpans !== undefined) app.addHook('onResponse', finishSpans)
}
