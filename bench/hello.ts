// The reference for the authorizer's decision rows: a plain fastify 5 answering every
// GET with 200 and an empty body, no plugins, no logger. It gets the very request a
// decision row sends (the same target and headers), so the decision rows' ratio to it
// is what deciding costs over reading a request and writing an empty answer.
// With HELLO=node-http, node:http alone answers instead (no fastify): the floor of any
// Node decision service over HTTP.
// Runs as its own child process, pinned like every server under test.
//
// Env: PORT (default 0 = ephemeral), HOST (default 127.0.0.1), HELLO (fastify, node-http).
// Prints "listening <port>" on stdout once bound.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'

const host = process.env['HOST'] ?? '127.0.0.1'
const port = Number(process.env['PORT'] ?? '0')

let close: () => Promise<void>
let address: AddressInfo | string | null
if (process.env['HELLO'] === 'node-http') {
  const server = createServer((_request, response) => { response.end() })
  await new Promise<void>((resolve) => server.listen(port, host, resolve))
  address = server.address()
  close = async () => { await new Promise((resolve) => server.close(resolve)) }
} else {
  const app = Fastify({ logger: false })
  app.get('*', (_request, reply) => { reply.send() })
  await app.listen({ host, port })
  address = app.server.address()
  close = async () => { await app.close() }
}

if (address === null || typeof address === 'string') throw new Error('hello: unexpected address')
process.stdout.write(`listening ${address.port}\n`)

process.once('SIGTERM', () => {
  close().then(() => process.exit(0), () => process.exit(1))
})
