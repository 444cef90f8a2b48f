/**
 * The body limit, in one place: a declared Content-Length over `limits.body_bytes` is
 * refused before anything is read (gate.ts), and every body that streams to an
 * upstream is counted as it goes (proxy.ts), whatever its headers say: the bytes are
 * counted, not the framing the headers claim, so no byte past the limit is passed on.
 * A body that stops arriving for `limits.body_idle_timeout_ms` fails the same way, so
 * a slow client cannot hold an upstream connection.
 *
 * A refused body fails the counting stream: undici aborts the upstream request (its
 * connection is closed, not reused) and the proxy answers 413 or 408. The client's
 * request stream is unpiped, never destroyed, so that answer can still be written.
 */
import type { FastifyReply } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import { Transform, type TransformCallback } from 'node:stream'
import type { ErrorCode, Reason } from '../errors.js'
import { deny } from '../http/deny.js'

export type BodyRefusal = 'too_large' | 'idle' | 'client_gone'

export class BodyRefused extends Error {
  override readonly name = 'BodyRefused'
  readonly code = 'KEYGATE_BODY_REFUSED'
  constructor (readonly refusal: BodyRefusal) {
    super(`request body refused: ${refusal}`)
  }
}

export interface BodyLimits {
  /** limits.body_bytes */
  bytes: number
  /** limits.body_idle_timeout_ms */
  idleMs: number
}

/** A declared Content-Length over the limit: refused before any byte is read. */
export function declaredTooLarge (headers: IncomingHttpHeaders, bytes: number): boolean {
  const declared = headers['content-length']
  return declared !== undefined && Number(declared) > bytes
}

/** The client's body as it streams upstream: counted, and failed past the limit or when idle. */
export function limitBody (source: Readable, limits: BodyLimits): Readable {
  return new CountedBody(source, limits)
}

class CountedBody extends Transform {
  private seen = 0
  private readonly timer: NodeJS.Timeout

  constructor (private readonly source: Readable, private readonly limits: BodyLimits) {
    super()
    // (undici listens from the moment the upstream request is made; this covers the moments before)
    this.on('error', ignore)
    this.timer = setTimeout(this.refuse, limits.idleMs, 'idle')
    source.once('close', this.sourceClosed)
    source.pipe(this)
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length
    if (this.seen > this.limits.bytes) {
      this.refuse('too_large')
      callback()
      return
    }
    this.timer.refresh()
    callback(null, chunk)
  }

  override _flush (callback: TransformCallback): void {
    clearTimeout(this.timer)
    callback()
  }

  override _destroy (err: Error | null, callback: (error?: Error | null) => void): void {
    clearTimeout(this.timer)
    this.source.off('close', this.sourceClosed)
    callback(err)
  }

  private readonly refuse = (refusal: BodyRefusal): void => {
    if (this.destroyed) return
    this.source.unpipe(this)
    this.destroy(new BodyRefused(refusal))
  }

  /** the client went away before its body ended */
  private readonly sourceClosed = (): void => {
    if (!this.writableEnded) this.refuse('client_gone')
  }
}

function ignore (): void {}

/** What each refusal is answered with, and the reason logged. */
const ANSWERS: Record<BodyRefusal, [ErrorCode, Reason]> = {
  too_large: ['payload_too_large', 'body_too_large'],
  idle: ['request_timeout', 'request_timeout'],
  client_gone: ['bad_request', 'bad_request']
}

/** Answers a refused body; the rest of it is never read, so the connection closes after the answer. */
export function refuseBody (reply: FastifyReply, refusal: BodyRefusal): FastifyReply {
  const [code, reason] = ANSWERS[refusal]
  // (a metered request's fixed cost, spent by its decision, is given back once: gate.ts)
  const kg = reply.request.kg
  if (kg.refund !== undefined) {
    kg.refund()
    kg.refund = undefined
  }
  reply.header('connection', 'close')
  return deny(reply, code, reason)
}

/**
 * Why a body was refused, when an error (or any error in its cause chain) says so;
 * fastify's own body limit (its built-in parsers) counts as too large.
 */
export function bodyRefusal (err: unknown): BodyRefusal | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof BodyRefused) return e.refusal
    if ((e as { code?: unknown }).code === 'FST_ERR_CTP_BODY_TOO_LARGE') return 'too_large'
  }
  return undefined
}
