// The fastify reference rows: a plain fastify 5 + @fastify/http-proxy reverse proxy
// with no authentication, forwarding /api/v1/* to the origin stub (what a fastify
// gateway costs before its own work; the baseline is the leaner bench/lean-proxy.ts).
// Runs as its own child process (pinned like keygate) so the comparison is like for like.
//
// With PROXY=reply-from: fastify + @fastify/reply-from (http-proxy's engine, without
// its route handler), still no auth.
//
// Env: ORIGIN_URL (required), PORT (default 0 = ephemeral), HOST (default 127.0.0.1), PROXY.
// Prints "listening <port>" on stdout once bound.
import Fastify from 'fastify'
import httpProxy from '@fastify/http-proxy'
import replyFrom from '@fastify/reply-from'

const upstream = process.env['ORIGIN_URL']
if (upstream === undefined || upstream === '') {
  process.stderr.write('baseline: ORIGIN_URL is required\n')
  process.exit(2)
}

const app = Fastify({ logger: false })
if (process.env['PROXY'] === 'reply-from') {
  await app.register(replyFrom, { base: upstream })
  app.get('/api/v1/*', (_request, reply) => reply.from())
} else {
  await app.register(httpProxy, {
    upstream,
    prefix: '/api/v1',
    rewritePrefix: '/api/v1'
  })
}

const host = process.env['HOST'] ?? '127.0.0.1'
const port = Number(process.env['PORT'] ?? '0')
await app.listen({ host, port })

const address = app.server.address()
if (address === null || typeof address === 'string') throw new Error('baseline: unexpected address')
process.stdout.write(`listening ${address.port}\n`)

process.once('SIGTERM', () => {
  app.close().then(() => process.exit(0), () => process.exit(1))
})
