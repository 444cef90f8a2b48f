// Ask the kernel for a free TCP port on the loopback interface.
import { createServer } from 'node:net'

export async function freePort (host = '127.0.0.1'): Promise<number> {
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
