/** An HTTP status as the CheckResponse status, and a refusal's denied_response (src/authorizer-grpc/check-response.ts). */
import t from 'tap'
import { deniedResponse, grpcCodeOf } from '../../../src/authorizer-grpc/check-response.js'

t.test('an HTTP status maps to its gRPC status', async (t) => {
  const table: Array<[number, number, string]> = [
    [400, 3, 'INVALID_ARGUMENT'], [431, 3, 'INVALID_ARGUMENT'], [401, 16, 'UNAUTHENTICATED'],
    [403, 7, 'PERMISSION_DENIED'], [404, 5, 'NOT_FOUND'], [429, 8, 'RESOURCE_EXHAUSTED'],
    [503, 14, 'UNAVAILABLE'], [500, 13, 'INTERNAL']
  ]
  for (const [status, code, name] of table) t.equal(grpcCodeOf(status), code, `${status}: ${name}`)
  const denied = deniedResponse('unauthorized', 'req-1', { 'www-authenticate': 'Bearer realm="keygate"' })
  t.equal(denied.status.code, 16)
  t.equal(denied.denied_response?.status.code, 401)
  t.same(JSON.parse(denied.denied_response?.body ?? ''), {
    error: { code: 'unauthorized', message: 'Invalid or missing authentication key', status: 401 }
  })
  t.same(denied.denied_response?.headers.map((h) => h.header.key).sort(), ['content-type', 'www-authenticate', 'x-request-id'])
})
