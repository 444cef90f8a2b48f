/**
 * WebSocket connections (src/websocket/): how many are open, and why they ended. Their
 * upgrades are counted with every other request, `mode="websocket"` (request-metrics.ts).
 */
import type { Registrar } from './registrar.js'
import { CountTable } from './series.js'

/**
 * Why a connection ended: one side closed it (or went away), a decision taken again on
 * a change refused it (`revoked`: revoked, expired, deactivated, lost the permission,
 * another identity), the registry could not be read past `cache.stale_if_error_s`
 * (`unavailable`), a protocol error or an oversized message (`error`), or the gateway
 * shut down.
 */
export const CLOSE_CAUSES = ['client', 'upstream', 'revoked', 'unavailable', 'error', 'shutdown'] as const
export type CloseCause = typeof CLOSE_CAUSES[number]

/** Recorded by the connection registry (src/websocket/connections.ts). */
export interface WebSocketMeter {
  /** a connection is relayed (both handshakes done) */
  opened: () => void
  closed: (cause: CloseCause) => void
}

export function webSocketMetrics (r: Registrar): WebSocketMeter {
  let open = 0
  r.level('keygate_websocket_connections',
    'WebSocket connections open now (relayed between a client and an upstream).', 'sum',
    () => open)
  const closed = new CountTable((slot) => ({ cause: CLOSE_CAUSES[slot] as string }))
  for (let slot = 0; slot < CLOSE_CAUSES.length; slot++) closed.add(slot, 0)
  r.counter({
    name: 'keygate_websocket_closed_total',
    help: 'WebSocket connections ended, by cause: client, upstream (that side closed or went away), revoked (a ' +
      'decision taken again on a registry change refused it: close code 1008), unavailable (the registry could not ' +
      'be read: 1013), error (a protocol error or a message over websocket.max_message_bytes), shutdown (1001).',
    labelNames: ['cause'],
    collect () { closed.exportTo(this) }
  })
  return {
    opened () { open++ },
    closed (cause) {
      open--
      closed.add(CLOSE_CAUSES.indexOf(cause))
    }
  }
}
