/**
 * Which request a decision request asks about (src/authorizer/original-request.ts):
 * with authz.proxy `auto`, Traefik's pair, nginx's, or (neither there) Envoy's own
 * method and target under the prefix; both pairs at once are ambiguous. A named proxy
 * reads its own way only.
 */
import t from 'tap'
import { clientAddress } from '../../../src/client-address.js'
import { namesOriginal, originalRequest, type Proxy } from '../../../src/authorizer/original-request.js'

type Case = [string, string[], string, string, string, ReturnType<typeof originalRequest>]

const cases: Case[] = [
  ['Traefik', ['X-Forwarded-Method', 'POST', 'X-Forwarded-Uri', '/api/v1/users?x=1'], 'GET', '/', '', { ok: true, via: 'traefik', method: 'POST', target: '/api/v1/users?x=1' }],
  ['Traefik, any case', ['x-forwarded-method', 'GET', 'X-FORWARDED-URI', '/a'], 'GET', '/', '', { ok: true, via: 'traefik', method: 'GET', target: '/a' }],
  ['nginx', ['X-Original-Method', 'DELETE', 'X-Original-URI', '/api/v1/x'], 'GET', '/_keygate', '', { ok: true, via: 'nginx', method: 'DELETE', target: '/api/v1/x' }],
  ['both pairs: ambiguous', ['X-Original-Method', 'GET', 'X-Original-URI', '/n', 'X-Forwarded-Method', 'PUT', 'X-Forwarded-Uri', '/t'], 'GET', '/', '', { ok: false, problem: 'ambiguous' }],
  ['one header of the other pair: ambiguous', ['X-Original-Method', 'GET', 'X-Original-URI', '/n', 'X-Forwarded-Method', 'PUT'], 'GET', '/', '', { ok: false, problem: 'ambiguous' }],
  ['Envoy, no prefix', ['Authorization', 'Bearer x'], 'PATCH', '/api/v1/x?y', '', { ok: true, via: 'envoy', method: 'PATCH', target: '/api/v1/x?y' }],
  ['Envoy, prefix removed', [], 'GET', '/ext-authz/api/v1/x', '/ext-authz', { ok: true, via: 'envoy', method: 'GET', target: '/api/v1/x' }],
  ['Envoy, the prefix alone', [], 'GET', '/ext-authz', '/ext-authz', { ok: false, problem: 'outside_path_prefix' }],
  ['Envoy, the prefix and a query', [], 'GET', '/ext-authz?a', '/ext-authz', { ok: false, problem: 'outside_path_prefix' }],
  ['Envoy, not segment-wise under the prefix', [], 'GET', '/ext-authzx/api', '/ext-authz', { ok: false, problem: 'outside_path_prefix' }],
  ['Envoy, elsewhere', [], 'GET', '/api/v1/x', '/ext-authz', { ok: false, problem: 'outside_path_prefix' }],
  ['half a Traefik pair (method)', ['X-Forwarded-Method', 'GET'], 'GET', '/api/v1/x', '', { ok: false, problem: 'bad_request' }],
  ['half a Traefik pair (uri), nginx\'s whole', ['X-Forwarded-Uri', '/t', 'X-Original-Method', 'GET', 'X-Original-URI', '/n'], 'GET', '/', '', { ok: false, problem: 'ambiguous' }],
  ['half an nginx pair', ['X-Original-URI', '/n'], 'GET', '/', '', { ok: false, problem: 'bad_request' }],
  ['a header twice', ['X-Original-Method', 'GET', 'X-Original-URI', '/a', 'x-original-uri', '/b'], 'GET', '/', '', { ok: false, problem: 'bad_request' }],
  ['a method twice, same value', ['X-Forwarded-Method', 'GET', 'X-Forwarded-Method', 'GET', 'X-Forwarded-Uri', '/a'], 'GET', '/', '', { ok: false, problem: 'bad_request' }],
  ['an unknown method', ['X-Forwarded-Method', 'FROB', 'X-Forwarded-Uri', '/a'], 'GET', '/', '', { ok: false, problem: 'bad_request' }],
  ['a lower-case method', ['X-Forwarded-Method', 'get', 'X-Forwarded-Uri', '/a'], 'GET', '/', '', { ok: false, problem: 'bad_request' }],
  ['CONNECT', ['X-Forwarded-Method', 'CONNECT', 'X-Forwarded-Uri', '/a'], 'GET', '/', '', { ok: false, problem: 'bad_request' }],
  ['an empty method', ['X-Forwarded-Method', '', 'X-Forwarded-Uri', '/a'], 'GET', '/', '', { ok: false, problem: 'bad_request' }]
]

t.test('the original request', async (t) => {
  for (const [name, headers, method, target, prefix, expected] of cases) {
    t.same(originalRequest(headers, method, target, prefix), expected, name)
  }
})

type ProxyCase = [string, Proxy, string[], string, string, string, ReturnType<typeof originalRequest>]
const both = ['X-Original-Method', 'GET', 'X-Original-URI', '/n', 'X-Forwarded-Method', 'PUT', 'X-Forwarded-Uri', '/t']
const proxyCases: ProxyCase[] = [
  ['nginx: its own pair, whatever else', 'nginx', both, 'POST', '/e', '', { ok: true, via: 'nginx', method: 'GET', target: '/n' }],
  ['nginx: without its pair', 'nginx', ['X-Forwarded-Method', 'PUT', 'X-Forwarded-Uri', '/t'], 'POST', '/e', '', { ok: false, problem: 'bad_request' }],
  ['traefik: its own pair, whatever else', 'traefik', both, 'POST', '/e', '', { ok: true, via: 'traefik', method: 'PUT', target: '/t' }],
  ['traefik: without its pair', 'traefik', ['X-Original-Method', 'GET', 'X-Original-URI', '/n'], 'POST', '/e', '', { ok: false, problem: 'bad_request' }],
  ['envoy: its own target, whatever else', 'envoy', both, 'POST', '/p/e', '/p', { ok: true, via: 'envoy', method: 'POST', target: '/e' }],
  ['envoy: a header twice is no matter', 'envoy', ['X-Original-URI', '/a', 'X-Original-URI', '/b'], 'GET', '/e', '', { ok: true, via: 'envoy', method: 'GET', target: '/e' }]
]

t.test('a named proxy: its own way only', async (t) => {
  for (const [name, proxy, headers, method, target, prefix, expected] of proxyCases) {
    t.same(originalRequest(headers, method, target, prefix, proxy), expected, name)
  }
})

t.test('namesOriginal: any of the four headers', async (t) => {
  t.equal(namesOriginal(['X-Original-URI', '/x']), true)
  t.equal(namesOriginal(['x-forwarded-method', 'GET']), true)
  t.equal(namesOriginal(['Authorization', 'Bearer x', 'X-Forwarded-For', '1.2.3.4']), false)
})

t.test('clientAddress: the last X-Forwarded-For entry when it is an address, else the peer', async (t) => {
  t.equal(clientAddress([], '127.0.0.1'), '127.0.0.1')
  t.equal(clientAddress(['X-Forwarded-For', '203.0.113.7'], '127.0.0.1'), '203.0.113.7')
  t.equal(clientAddress(['X-Forwarded-For', '10.9.9.9, 203.0.113.7'], '127.0.0.1'), '203.0.113.7', 'the entry the proxy appended')
  t.equal(clientAddress(['x-forwarded-for', '1.1.1.1', 'X-Forwarded-For', '2001:db8::1'], '127.0.0.1'), '2001:db8::1', 'the last header\'s last entry')
  t.equal(clientAddress(['X-Forwarded-For', ' , '], '::1'), '::1', 'an empty entry: the peer')
  t.equal(clientAddress(['X-Forwarded-For', 'junk-1234'], '127.0.0.1'), '127.0.0.1', 'not an address: the peer')
  t.equal(clientAddress(['X-Forwarded-For', '203.0.113.7, unknown'], '127.0.0.1'), '127.0.0.1', 'the last entry is not an address: the peer, not an earlier entry')
  t.equal(clientAddress(['X-Forwarded-For', '203.0.113.7:4711'], '127.0.0.1'), '127.0.0.1', 'an address with a port: the peer')
  t.equal(clientAddress(['X-Forwarded-For', 'x'.repeat(16_000)], '127.0.0.1'), '127.0.0.1', 'a long string: the peer')
})
