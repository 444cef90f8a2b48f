// Upstream stub for the benchmark: answers GET /api/v1/users with a small,
// fixed JSON body over keep-alive. Runs as its own child process (spawned by
// bench/run.ts) so it never shares an event loop with the proxy under test.
//
// Env: PORT (default 0 = ephemeral), HOST (default 127.0.0.1), EXTRA_PORTS (more ports
// it answers on the same way, comma-separated: the targets of the "3 targets" row, three
// origins served by one process and one event loop, as the single-url rows' one origin).
// Prints "listening <port>" on stdout once bound.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'

const BODY = Buffer.from(JSON.stringify({
  users: [
    { id: 1, name: 'Ada Lovelace' },
    { id: 2, name: 'Alan Turing' }
  ],
  page: 1,
  total: 2
}))

const handler = (req: IncomingMessage, res: ServerResponse): void => {
  if (req.method === 'GET' && req.url === '/api/v1/users') {
    res.writeHead(200, {
      'content-type': 'application/json',
      'content-length': BODY.length
    })
    res.end(BODY)
    return
  }
  res.writeHead(404, { 'content-length': 0 })
  res.end()
}

function serverOf (): Server {
  const server = createServer(handler)
  // Longer than undici's default keep-alive so the proxy never races an idle close.
  server.keepAliveTimeout = 65_000
  server.headersTimeout = 66_000
  return server
}
const server = serverOf()
const extra = (process.env['EXTRA_PORTS'] ?? '').split(',').filter((p) => p !== '').map((p) => {
  const s = serverOf()
  s.listen(Number(p), process.env['HOST'] ?? '127.0.0.1')
  return s
})

const host = process.env['HOST'] ?? '127.0.0.1'
const port = Number(process.env['PORT'] ?? '0')

server.listen(port, host, () => {
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('origin: unexpected address')
  process.stdout.write(`listening ${address.port}\n`)
})

process.once('SIGTERM', () => {
  for (const s of extra) {
    s.close()
    s.closeAllConnections()
  }
  server.close(() => process.exit(0))
  server.closeAllConnections()
})
