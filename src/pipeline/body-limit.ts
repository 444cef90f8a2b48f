/**
 * Request bodies stream to the upstream; this counts them on the way and fails
 * the stream past the limit (chunked bodies have no Content-Length to check first).
 */
import { Transform, type TransformCallback } from 'node:stream'

export class BodyTooLarge extends Error {
  override readonly name = 'BodyTooLarge'
  readonly code = 'KEYGATE_BODY_TOO_LARGE'
}

export function limitBody (limit: number): Transform {
  let seen = 0
  return new Transform({
    transform (chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      seen += chunk.length
      if (seen > limit) callback(new BodyTooLarge('request body too large'))
      else callback(null, chunk)
    }
  })
}

/** Whether an error (or any error in its cause chain) is a BodyTooLarge. */
export function isBodyTooLarge (err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof BodyTooLarge) return true
  }
  return false
}
