/**
 * The headers of the upgrade sent to the upstream (step 4 of upgrade.ts): the route's
 * rewrite of the client's (identity headers set, the key header and spoofed identity
 * headers removed, and Host: the upstream's, as for a proxied request), without the
 * client's own Sec-WebSocket-* (the upstream connection's), with the trace context.
 */
import type { IncomingHttpHeaders } from 'node:http'
import { withoutConnectionListed, type RequestHeaderRewriter } from '../http/identity-headers.js'
import type { ToUpstream } from '../tracing/request-trace.js'
import type { Upgrade } from './upgrade-options.js'

export function handshakeHeaders (
  u: Upgrade, rewrite: RequestHeaderRewriter, toUpstream: ToUpstream | undefined
): IncomingHttpHeaders {
  const { id, state: kg, req: raw } = u
  const request = { id, method: 'GET', kg, raw, protocol: 'http' as const, headers: raw.headers }
  const headers = rewrite(request, withoutConnectionListed(raw.headers))
  for (const name in headers) if (name.startsWith('sec-websocket-')) delete headers[name]
  toUpstream?.(u.state.trace, headers, 'GET')
  return headers
}
