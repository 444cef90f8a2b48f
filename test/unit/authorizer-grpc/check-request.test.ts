/** A CheckRequest as the original request the decision takes (src/authorizer-grpc/check-request.ts). */
import t from 'tap'
import { originalCheck, sourceAddress } from '../../../src/authorizer-grpc/check-request.js'

const LIMITS = { header_count: 4, header_bytes: 200 }
const http = (fields: Record<string, unknown>): Parameters<typeof originalCheck>[0] =>
  ({ attributes: { request: { http: fields } } }) as Parameters<typeof originalCheck>[0]

t.test('a CheckRequest as the original request', async (t) => {
  const ok = originalCheck(http({
    method: 'GET', path: '/a?b', host: 'h.example', headers: { ':authority': 'h.example', authorization: 'Bearer x' }
  }), LIMITS)
  t.same(ok, { ok: true, method: 'GET', target: '/a?b', rawHeaders: ['authorization', 'Bearer x'], host: 'h.example' },
    'pseudo-headers left out')
  const raw = originalCheck(http({
    method: 'GET', path: '/a', header_map: { headers: [{ key: 'authorization', raw_value: Buffer.from('Bearer y') }, { key: 'x', value: 'v' }] }
  }), LIMITS)
  t.match(raw, { ok: true, rawHeaders: ['authorization', 'Bearer y', 'x', 'v'] }, 'header_map, raw_value or value')
  t.match(originalCheck(http({ method: 'G T', path: '/a' }), LIMITS), { ok: false, code: 'bad_request' }, 'a bad method')
  t.match(originalCheck(http({ method: 'GET', path: '' }), LIMITS), { ok: false, code: 'bad_request' }, 'no path')
  t.match(originalCheck(http({}), LIMITS), { ok: false, code: 'bad_request' }, 'nothing at all')
  t.match(originalCheck({}, LIMITS), { ok: false, code: 'bad_request' }, 'no attributes')
  const many = Object.fromEntries(['a', 'b', 'c', 'd', 'e'].map((n) => [n, 'v']))
  t.match(originalCheck(http({ method: 'GET', path: '/', headers: many }), LIMITS), { ok: false, code: 'header_too_large' },
    'more headers than header_count')
  t.match(originalCheck(http({ method: 'GET', path: '/', headers: { a: 'v'.repeat(300) } }), LIMITS),
    { ok: false, code: 'header_too_large' }, 'more bytes than header_bytes')
})

t.test('the client Envoy reports: an IP address, or none', async (t) => {
  const of = (address: unknown): string | undefined =>
    sourceAddress({ attributes: { source: { address: { socket_address: { address } } } } } as Parameters<typeof sourceAddress>[0])
  t.equal(of('203.0.113.9'), '203.0.113.9')
  t.equal(of('2001:db8::1'), '2001:db8::1')
  t.equal(of('client.example'), undefined)
  t.equal(of(undefined), undefined)
  t.equal(sourceAddress({}), undefined)
})
