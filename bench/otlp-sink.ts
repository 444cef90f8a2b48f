// A stand-in OpenTelemetry collector for the tracing rows: takes every POST (OTLP/HTTP
// traces), reads the body, answers 200 with an empty export response in the request's
// encoding (no bytes for protobuf, `{}` for JSON); a GET answers 200 with the number of
// export requests and bytes received so far. Runs as its own child process (started by
// bench/keygate.ts) on the load generator's CPU, never sharing the gateway's.
//
// Env: PORT (default 0 = ephemeral), HOST (default 127.0.0.1).
// Prints "listening <port>" on stdout once bound.
import { createServer } from 'node:http'

let exports = 0
let bytes = 0

const server = createServer((req, res) => {
  if (req.method !== 'POST') {
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ exports, bytes }))
    return
  }
  req.on('data', (chunk: Buffer) => { bytes += chunk.length })
  const protobuf = String(req.headers['content-type']).startsWith('application/x-protobuf')
  req.on('end', () => {
    exports++
    if (protobuf) {
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 })
      res.end()
      return
    }
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': 2 })
    res.end('{}')
  })
})

const host = process.env['HOST'] ?? '127.0.0.1'
const port = Number(process.env['PORT'] ?? '0')

server.listen(port, host, () => {
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('otlp-sink: unexpected address')
  process.stdout.write(`listening ${address.port}\n`)
})

process.once('SIGTERM', () => {
  server.close(() => process.exit(0))
  server.closeAllConnections()
})
