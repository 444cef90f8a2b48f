/**
 * The Check method's codec (src/authorizer-grpc/check-codec.ts) against @grpc/proto-loader's
 * for the same definition: the same bytes for every answer shape, and the same original
 * request read from the same CheckRequest bytes.
 */
import t from 'tap'
import { checkCodec } from '../../../src/authorizer-grpc/check-codec.js'
import { originalCheck, sourceAddress } from '../../../src/authorizer-grpc/check-request.js'
import { deniedResponse, okResponse } from '../../../src/authorizer-grpc/check-response.js'
import { authorizationService, type CheckResponse } from '../../../src/authorizer-grpc/envoy-protos.js'
import type { AllowedAnswer } from '../../../src/authorizer/allowed-answer.js'

const reference = authorizationService()['Check']
if (reference === undefined) throw new Error('no Check method')
const { decode, encode } = checkCodec()
const LIMITS = { header_count: 100, header_bytes: 16_384 }

/** proto-loader's shape of the same answer: enums as their names */
function named (r: CheckResponse): object {
  const opts = (list: CheckResponse['ok_response'] extends infer O ? O extends { headers: infer H } ? H : never : never) =>
    list.map((h) => ({ ...h, append_action: h.append_action === 2 ? 'OVERWRITE_IF_EXISTS_OR_ADD' : 'other' }))
  return {
    status: r.status,
    ...(r.ok_response === undefined
      ? {}
      : {
          ok_response: {
            ...r.ok_response,
            headers: opts(r.ok_response.headers),
            response_headers_to_add: opts(r.ok_response.response_headers_to_add)
          }
        }),
    ...(r.denied_response === undefined
      ? {}
      : { denied_response: { ...r.denied_response, headers: opts(r.denied_response.headers) } })
  }
}

t.test('every answer shape encodes to proto-loader\'s bytes', async (t) => {
  const allowed: AllowedAnswer = {
    status: 200,
    headers: { 'x-auth-key-id': 'k1', 'x-auth-user-id': 'alice', 'x-request-id': 'r1', traceparent: '00-a-b-01' },
    remove: { names: ['authorization', 'x-auth-assertion'], list: 'authorization, x-auth-assertion' }
  }
  const shapes: Array<[string, CheckResponse]> = [
    ['allowed', okResponse(allowed, undefined)],
    ['allowed, rate-limited headers', okResponse(allowed, { 'ratelimit-limit': '10', 'ratelimit-remaining': '9' })],
    ['allowed, an assertion (lengths over 127 bytes), a non-ASCII and an empty value', okResponse({
      ...allowed, headers: { ...allowed.headers, 'x-auth-assertion': 'e'.repeat(20_000), 'x-auth-user-id': 'zoë', 'x-e': '' }
    }, undefined)],
    ['allowed, nothing to remove', okResponse({ ...allowed, remove: { names: [], list: '' } }, undefined)],
    ['refused 401', deniedResponse('unauthorized', 'r2', { 'www-authenticate': 'Bearer realm="keygate"' })],
    ['refused 503', deniedResponse('service_unavailable', 'r3', {})],
    ['refused 429', deniedResponse('rate_limited', 'r4', { 'retry-after': '1' })],
    ['OK, no answer', { status: { code: 0 } }]
  ]
  for (const [name, response] of shapes) {
    const ours = encode(response)
    t.ok(ours.length >= 4, `${name}: encoded`)
    t.equal(ours.toString('hex'), reference.responseSerialize(named(response)).toString('hex'), name)
    // twice: the status bytes kept for the shape are the same the second time
    t.equal(encode(response).toString('hex'), ours.toString('hex'), `${name}, again`)
  }
})

t.test('a CheckRequest reads the same decoded either way', async (t) => {
  const requests: Array<[string, object]> = [
    ['the header map', {
      attributes: {
        source: { address: { socket_address: { address: '203.0.113.9', port_value: 40000 } } },
        destination: { address: { socket_address: { address: '10.0.0.1', port_value: 443 } } },
        request: {
          time: { seconds: 1700000000, nanos: 5 },
          http: {
            id: '123',
            method: 'GET',
            path: '/api/v1/users?page=2',
            host: 'api.example',
            scheme: 'https',
            size: 0,
            headers: { ':authority': 'api.example', authorization: 'Bearer kg_x', 'user-agent': 'envoy' }
          }
        },
        context_extensions: { a: 'b' }
      }
    }],
    ['the raw header list', {
      attributes: {
        source: { address: { pipe: { path: '/tmp/s' } } },
        request: {
          http: {
            method: 'POST',
            path: '/x',
            header_map: { headers: [{ key: 'authorization', raw_value: Buffer.from('Bearer y') }, { key: 'b', value: 'c' }] }
          }
        }
      }
    }],
    ['an empty request', {}],
    ['no http', { attributes: { request: {} } }]
  ]
  for (const [name, request] of requests) {
    const bytes = reference.requestSerialize(request)
    const theirs = reference.requestDeserialize(bytes)
    const ours = decode(bytes)
    t.same(originalCheck(ours, LIMITS), originalCheck(theirs, LIMITS), `${name}: the original request`)
    t.equal(sourceAddress(ours), sourceAddress(theirs), `${name}: the source address`)
  }
  const first = decode(reference.requestSerialize(requests[0]?.[1] ?? {}))
  t.match(originalCheck(first, LIMITS), { ok: true, method: 'GET', target: '/api/v1/users?page=2', host: 'api.example' })
  t.equal(sourceAddress(first), '203.0.113.9')
})
