// The floor of the gRPC authorizer's row: a grpc-js server answering every Envoy Check
// with OK and no decision (no ok_response, nothing read of the request but its decoding).
// It loads the very definition keygate's gRPC authorizer serves (the same Envoy protos,
// the same @grpc/proto-loader options) and takes the same server options, so its CPU per
// call is what grpc-js, node's HTTP/2 and protobuf cost keygate's decision on their own.
// With CODEC=lean, the Check method uses keygate's own codec
// (src/authorizer-grpc/check-codec.ts) instead of proto-loader's.
// Runs as its own child process, pinned like every server under test.
//
// Env: PORT (default 0 = ephemeral), HOST (default 127.0.0.1), CODEC (proto-loader, lean).
// Prints "listening <port>" on stdout once bound.
import { Server, ServerCredentials, status, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js'
import { leanAuthorizationService } from '@keygate/gateway/dist/authorizer-grpc/check-codec.js'
import { authorizationService } from '@keygate/gateway/dist/authorizer-grpc/envoy-protos.js'

const host = process.env['HOST'] ?? '127.0.0.1'
const port = Number(process.env['PORT'] ?? '0')
const service = process.env['CODEC'] === 'lean' ? leanAuthorizationService() : authorizationService()

const OK = Object.freeze({ status: Object.freeze({ code: status.OK }) })
// the gRPC authorizer's option, with limits.header_bytes at its default (16 KiB)
const server = new Server({ 'grpc.max_receive_message_length': 4 * 16_384 + 65_536 })
server.addService(service, {
  Check: (_call: ServerUnaryCall<unknown, unknown>, respond: sendUnaryData<unknown>) => { respond(null, OK) }
})
const bound = await new Promise<number>((resolve, reject) => {
  server.bindAsync(`${host}:${port}`, ServerCredentials.createInsecure(), (err, p) => {
    if (err !== null) reject(err)
    else resolve(p)
  })
})
process.stdout.write(`listening ${bound}\n`)

process.once('SIGTERM', () => {
  server.tryShutdown(() => process.exit(0))
})
