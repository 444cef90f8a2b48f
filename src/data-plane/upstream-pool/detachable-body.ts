/**
 * A request body that can be offered to a second target: undici destroys the body it
 * was given when its request fails, so a request that may be retried gets this stand-in
 * instead. The stand-in reads from the client's body only once undici reads it (after
 * the connection is up and the request head written); until then the client's body is
 * untouched, and a failed connection leaves it whole for the next attempt. Once read
 * from, it is the body: destroyed with it (a body partly sent is never sent again).
 */
import { Readable } from 'node:stream'

export function detachable (source: Readable): Readable {
  let reading = false
  const onData = (chunk: Buffer): void => { if (!out.push(chunk)) source.pause() }
  const onEnd = (): void => { out.push(null) }
  const onError = (err: Error): void => { out.destroy(err) }
  const out: Readable = new Readable({
    read () {
      if (!reading) {
        reading = true
        source.on('data', onData)
        source.once('end', onEnd)
      }
      source.resume()
    },
    destroy (err, callback) {
      source.off('data', onData)
      source.off('end', onEnd)
      source.off('error', onError)
      if (reading) source.destroy(err ?? undefined)
      callback(err)
    }
  })
  if (source.errored !== null) out.destroy(source.errored)
  else source.on('error', onError)
  return out
}
