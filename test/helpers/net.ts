/**
 * Small networking helpers for tests.
 *
 * freePort() asks the kernel for an unused TCP port on 127.0.0.1 by listening
 * on port 0 and closing again. There is an unavoidable race between closing
 * and the caller binding the port, so callers that spawn servers should be
 * prepared to retry with a new port.
 */
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'

export async function freePort (host = '127.0.0.1'): Promise<number> {
  return await new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.once('error', reject)
    server.listen({ port: 0, host, exclusive: true }, () => {
      const { port } = server.address() as AddressInfo
      server.close((err) => {
        if (err) reject(err)
        else resolve(port)
      })
    })
  })
}
