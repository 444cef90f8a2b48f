// Ask the kernel for a free TCP port on the loopback interface. The kernel may hand out a
// port it just handed out (it was closed again at once), and a server given two ports
// (a gateway's listener and its admin listener) must get two: a port this process was
// given already is asked again.
import { createServer } from 'node:net'

const given = new Set<number>()
/** ports remembered at most (a long run starts a few thousand servers; the ephemeral range holds ~28,000) */
const REMEMBERED = 10_000

export async function freePort (host = '127.0.0.1'): Promise<number> {
  for (;;) {
    const port = await anyFreePort(host)
    if (given.has(port)) continue
    if (given.size >= REMEMBERED) given.clear()
    given.add(port)
    return port
  }
}

async function anyFreePort (host: string): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, host, () => {
      const address = server.address()
      if (address === null || typeof address === 'string') {
        server.close()
        reject(new Error('freePort: unexpected address'))
        return
      }
      server.close(() => resolve(address.port))
    })
  })
}
