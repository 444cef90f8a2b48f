// The benchmark's baseline: the leanest reverse proxy Node offers, `node:http` in front
// of an undici `Pool` to the origin (`pool.stream`: undici writes the upstream's body
// straight into the client's response, as keygate's proxy does), with no framework, no
// authentication, no log and no metrics. Its cost per request is the floor under any Node
// gateway, so every proxied row's ratio to it is what the gateway adds above Node itself.
// It forwards the method, the path and query as received and the headers less the
// hop-by-hop ones, and streams a request body; an upstream failure before its answer is a
// 502. Runs as its own child process, pinned like every server under test.
//
// Env: ORIGIN_URL (required), PORT (default 0 = ephemeral), HOST (default 127.0.0.1).
// Prints "listening <port>" on stdout once bound.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import type { Writable } from 'node:stream'
import { Pool, type Dispatcher } from 'undici'

const upstream = process.env['ORIGIN_URL']
if (upstream === undefined || upstream === '') {
  process.stderr.write('lean-proxy: ORIGIN_URL is required\n')
  process.exit(2)
}

/** headers of one connection, not of the message (RFC 9110 7.6.1); `host` is the origin's, set by undici */
const HOP_BY_HOP = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host'
])

function endToEnd (headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  for (const name in headers) {
    const value = headers[name]
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value
  }
  return out
}

const pool = new Pool(upstream)

/** the upstream's status and headers to the client; the client's response is where undici writes the body */
function answer (data: Dispatcher.StreamFactoryData<ServerResponse>): Writable {
  const res = data.opaque
  res.writeHead(data.statusCode, endToEnd(data.headers as IncomingHttpHeaders))
  return res
}

function ended (err: Error | null, data: Dispatcher.StreamData<ServerResponse>): void {
  if (err === null) return
  const res = data.opaque
  if (res.headersSent) res.destroy()
  else res.writeHead(502).end()
}

const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  const bodyless = req.method === 'GET' || req.method === 'HEAD'
  pool.stream({
    path: req.url ?? '/',
    method: req.method as Dispatcher.HttpMethod,
    headers: endToEnd(req.headers),
    body: bodyless ? null : req,
    opaque: res
  }, answer, ended)
})

const host = process.env['HOST'] ?? '127.0.0.1'
const port = Number(process.env['PORT'] ?? '0')
await new Promise<void>((resolve) => server.listen(port, host, resolve))
const address = server.address()
if (address === null || typeof address === 'string') throw new Error('lean-proxy: unexpected address')
process.stdout.write(`listening ${address.port}\n`)

process.once('SIGTERM', () => {
  server.close(() => { pool.close().then(() => process.exit(0), () => process.exit(1)) })
  server.closeAllConnections()
})
