/**
 * The relay between a client's WebSocket and the upstream's: every message passes as
 * it came (text stays text, binary stays binary; ws parses and re-frames them, and
 * checks text is UTF-8), pings and pongs pass end to end with their payload (neither
 * side is answered by the gateway), and a close on one side closes the other.
 *
 * Backpressure, per direction: when more than `maxBufferedBytes` wait to be written to
 * one side, the other side is no longer read (its TCP window fills, so its sender
 * slows down); reading resumes once what waits has drained below half of that. So
 * what the gateway holds per direction stays near that bound, plus the message being
 * parsed (at most websocket.max_message_bytes).
 *
 * Closes, as each side sees them:
 *   a close frame with a code     the other side gets the same code and reason
 *   a close frame without code    the other side gets one without code
 *   gone without a close (1006),  the other side gets 1001 (the client went away) or
 *   or a protocol error / a       1014 (the upstream failed: bad gateway)
 *   message over the limit
 *   the gateway ends it           both sides get the gateway's code (`end`)
 */
import type { WebSocket } from 'ws'
import type { CloseCause } from '../metrics/websocket-metrics.js'

export type Side = 'client' | 'upstream'

/** How a relayed connection ended: the cause, and the code each side was sent or sent. */
export interface Ending {
  cause: CloseCause
  code: number
}

export interface Relay {
  /** closes both sides with `code` and `reason` (never a secret: both sides read it) */
  end: (code: number, reason: string, cause: CloseCause) => void
  /** resolves once both sides are closed */
  closed: Promise<Ending>
}

/** Close codes an endpoint may send (RFC 6455 section 7.4; 1005 and 1006 only describe). */
function sendable (code: number): boolean {
  return (code >= 1000 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) ||
    (code >= 3000 && code <= 4999)
}

export function relay (client: WebSocket, upstream: WebSocket, maxBufferedBytes: number): Relay {
  let ending: Ending | undefined
  let open = 2
  let resolveClosed!: (e: Ending) => void
  const closed = new Promise<Ending>((resolve) => { resolveClosed = resolve })
  const failed = new Set<Side>()

  pipe(client, upstream, maxBufferedBytes, () => ending !== undefined)
  pipe(upstream, client, maxBufferedBytes, () => ending !== undefined)

  const onClose = (side: Side, other: WebSocket) => (code: number, reason: Buffer): void => {
    if (ending === undefined) {
      const failedHere = failed.has(side)
      ending = { cause: failedHere ? 'error' : side, code }
      // (the other side may be paused by backpressure: it must read the close's answer)
      other.resume()
      if (failedHere || code === 1006) {
        other.close(side === 'client' ? 1001 : 1014, side === 'client' ? 'client went away' : 'upstream went away')
      } else if (code === 1005) other.close()
      else if (sendable(code)) other.close(code, reason)
      else other.close(1001)
    }
    if (--open === 0) resolveClosed(ending)
  }
  client.on('close', onClose('client', upstream))
  upstream.on('close', onClose('upstream', client))
  // a protocol error or an oversized message: ws closes that side itself (1002, 1007, 1009)
  client.on('error', () => { failed.add('client') })
  upstream.on('error', () => { failed.add('upstream') })
  // (upstream.ts paused the upstream until now, so that nothing it sent is lost)
  upstream.resume()

  return {
    closed,
    end (code, reason, cause) {
      if (ending !== undefined) return
      ending = { cause, code }
      client.resume()
      upstream.resume()
      client.close(code, reason)
      upstream.close(code, reason)
    }
  }
}

/** Messages, pings and pongs from `from` to `to`, reading `from` only while `to` keeps up. */
function pipe (from: WebSocket, to: WebSocket, maxBufferedBytes: number, ended: () => boolean): void {
  const resumeBelow = maxBufferedBytes / 2
  // (ws calls back with null once the frame is written, with an error when it never will be)
  const drained = (err?: Error | null): void => {
    if (err === undefined || err === null) {
      if (from.isPaused && to.bufferedAmount <= resumeBelow) from.resume()
    }
  }
  from.on('message', (data: Buffer, isBinary: boolean) => {
    if (ended()) return
    to.send(data, { binary: isBinary }, drained)
    if (to.bufferedAmount > maxBufferedBytes && !from.isPaused) from.pause()
  })
  from.on('ping', (data: Buffer) => { if (!ended()) to.ping(data) })
  from.on('pong', (data: Buffer) => { if (!ended()) to.pong(data) })
}
