/**
 * Small networking helpers for tests.
 *
 * freePort() finds an unused TCP port on 127.0.0.1 for a server a test starts later
 * (often in a child process). The port is chosen below the kernel's ephemeral range
 * (`net.ipv4.ip_local_port_range`): the ports the kernel hands to every `listen(0)`
 * and to the source end of every outgoing connection of every test process. A port
 * from that range could be taken by any of those between this check and the
 * caller's bind, and a request meant for the caller's server would then reach
 * another test's. Below it, only another freePort() caller can race for the same
 * port (a random pick from thousands), so callers that spawn servers should still be
 * prepared to retry with a new port. Where the range leaves no room below it, the
 * kernel picks.
 */
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'

/** the lowest port handed out here */
const LOWEST = 10_000

/** the first port of the kernel's ephemeral range (Linux), or undefined when unknown */
function ephemeralStart (): number | undefined {
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    return Number.isInteger(first) ? first : undefined
  } catch {
    return undefined
  }
}

const below = ephemeralStart()

/** binds `port` (0: the kernel picks) and closes it again; the port bound, or undefined when it was in use */
async function tryPort (host: string, port: number): Promise<number | undefined> {
  return await new Promise<number | undefined>((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (port !== 0 && (err.code === 'EADDRINUSE' || err.code === 'EACCES')) resolve(undefined)
      else reject(err)
    })
    server.listen({ port, host, exclusive: true }, () => {
      const bound = (server.address() as AddressInfo).port
      server.close((err) => {
        if (err !== undefined) reject(err)
        else resolve(bound)
      })
    })
  })
}

export async function freePort (host = '127.0.0.1'): Promise<number> {
  if (below !== undefined && below - LOWEST >= 1000) {
    for (let attempt = 0; attempt < 50; attempt++) {
      const port = await tryPort(host, LOWEST + Math.floor(Math.random() * (below - LOWEST)))
      if (port !== undefined) return port
    }
  }
  return await tryPort(host, 0) as number
}
