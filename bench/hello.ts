// The reference for the authorizer's decision rows: a plain fastify 5 answering every
// GET with 200 and an empty body, no plugins, no logger. It gets the very request a
// decision row sends (the same target and headers), so the decision rows' ratio to it
// is what deciding costs over reading a request and writing an empty answer.
// Runs as its own child process, pinned like every server under test.
//
// Env: PORT (default 0 = ephemeral), HOST (default 127.0.0.1).
// Prints "listening <port>" on stdout once bound.
import Fastify from 'fastify'

const app = Fastify({ logger: false })
app.get('*', (_request, reply) => { reply.send() })

const host = process.env['HOST'] ?? '127.0.0.1'
const port = Number(process.env['PORT'] ?? '0')
await app.listen({ host, port })

const address = app.server.address()
if (address === null || typeof address === 'string') throw new Error('hello: unexpected address')
process.stdout.write(`listening ${address.port}\n`)

process.once('SIGTERM', () => {
  app.close().then(() => process.exit(0), () => process.exit(1))
})
