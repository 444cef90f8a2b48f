// The Connect floor, beside the grpc-js floor (bench/grpc-hello.ts): the same job, Envoy's
// Check answered with OK and no decision (nothing read of the request but its decoding),
// served by Connect for Node (@connectrpc/connect-node) over the gRPC protocol alone, on
// node:http2 cleartext. The service and its messages are the Envoy protos keygate loads,
// turned into @bufbuild/protobuf descriptors (bench/envoy-registry.ts); the largest message
// accepted is the gRPC authorizer's. Its CPU per call is what Connect, node's HTTP/2 and
// @bufbuild/protobuf would cost a decision on their own.
// Runs as its own child process, pinned like every server under test.
//
// Env: PORT (default 0 = ephemeral), HOST (default 127.0.0.1).
// Prints "listening <port>" on stdout once bound.
import { connectNodeAdapter } from '@connectrpc/connect-node'
import { createServer } from 'node:http2'
import type { AddressInfo } from 'node:net'
import { envoyCheckMethod } from './envoy-registry.js'

const host = process.env['HOST'] ?? '127.0.0.1'
const port = Number(process.env['PORT'] ?? '0')

const check = envoyCheckMethod()
const OK = { status: { code: 0 } }
const handler = connectNodeAdapter({
  grpc: true,
  grpcWeb: false,
  connect: false,
  // the gRPC authorizer's limit, with limits.header_bytes at its default (16 KiB)
  readMaxBytes: 4 * 16_384 + 65_536,
  routes: (router) => {
    router.rpc(check, () => OK)
  }
})
const server = createServer(handler)
await new Promise<void>((resolve, reject) => {
  server.once('error', reject)
  server.listen(port, host, () => { resolve() })
})
process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`)

process.once('SIGTERM', () => {
  server.close(() => process.exit(0))
  // open HTTP/2 sessions keep close() waiting: a floor has no calls to drain
  setTimeout(() => process.exit(0), 1000).unref()
})
