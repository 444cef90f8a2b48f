/** What the upgrade stage reads of a client's upgrade request (upgrade.ts). */
import type { IncomingMessage } from 'node:http'

/** `Upgrade: websocket` on HTTP/1.1, without a body: the only upgrade the gateway makes (fail closed). */
export function isWebSocketUpgrade (req: IncomingMessage): boolean {
  if (req.httpVersion !== '1.1') return false
  const upgrade = req.headers.upgrade
  if (upgrade === undefined || upgrade.trim().toLowerCase() !== 'websocket') return false
  const length = req.headers['content-length']
  return req.headers['transfer-encoding'] === undefined && (length === undefined || length === '0')
}

/** The client's subprotocol offers (ws already refused a malformed or repeated one). */
export function offeredProtocols (req: IncomingMessage): string[] {
  const header = req.headers['sec-websocket-protocol']
  if (header === undefined) return []
  return header.split(',').map((p) => p.trim()).filter((p) => p !== '')
}

/**
 * The `Authorization` header pairs: all a decision taken again reads of the request. A key
 * that came in the route's key header (`keyHeader`, lower case; the first decision took it
 * from there alone) is decided again as `Authorization: Bearer <key>`, the same credential.
 */
export function credentialOf (rawHeaders: readonly string[], keyHeader?: string): string[] {
  const out: string[] = []
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string
    if (name.length === 13 && name.toLowerCase() === 'authorization') {
      out.push(name, rawHeaders[i + 1] as string)
    } else if (keyHeader !== undefined && name.toLowerCase() === keyHeader) {
      out.push('authorization', `Bearer ${rawHeaders[i + 1] as string}`)
    }
  }
  return out
}
