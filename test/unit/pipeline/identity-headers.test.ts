import t from 'tap'
import type { FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import { createHeaderRewriter } from '../../../src/pipeline/identity-headers.js'

const identity = { keyId: 'k1', type: 'personal' as const, userId: 'alice', org: 'acme', role: 'reader', grants: undefined as never }

function request (peer: string): FastifyRequest {
  return { id: 'req-1', protocol: 'http', headers: { host: 'gw.example' }, raw: { socket: { remoteAddress: peer } }, kg: { identity } } as unknown as FastifyRequest
}

t.test('identity headers first, then the client\'s, then the forwarding headers', async (t) => {
  const rewrite = createHeaderRewriter({ prefix: 'X-Auth-', forwardAuthorization: false, trustedProxies: [] })
  const out = rewrite(request('10.0.0.9'), { host: 'upstream', accept: '*/*', 7: 'digits', 'x-auth-role': 'admin' } as IncomingHttpHeaders)
  t.same(Object.keys(out), [
    'x-auth-key-id', 'x-auth-key-type', 'x-auth-user-id', 'x-auth-org-id', 'x-auth-role', 'x-request-id',
    'host', 'accept', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'
  ], 'a name made of digits is dropped: it would sort ahead of everything')
  t.equal(out['x-auth-role'], 'reader', 'the client\'s identity header was replaced')
})

t.test('steering headers: kept only from a trusted proxy; drop_headers from nobody', async (t) => {
  const rewrite = createHeaderRewriter({ prefix: 'X-Auth-', forwardAuthorization: false, dropHeaders: ['X_Debug'], trustedProxies: ['10.0.0.0/8'] })
  const headers: IncomingHttpHeaders = { 'x-original-url': '/admin', 'true-client-ip': '1.2.3.4', x_real_ip: '1.2.3.4', 'x-debug': 'on', x_debug: 'on', kept: 'yes' }
  const untrusted = rewrite(request('192.0.2.1'), headers)
  t.same(['x-original-url', 'true-client-ip', 'x_real_ip', 'x-debug', 'x_debug'].filter((n) => n in untrusted), [], 'none from an untrusted peer')
  t.equal(untrusted.kept, 'yes')
  const trusted = rewrite(request('10.1.2.3'), headers)
  t.equal(trusted['x-original-url'], '/admin', 'kept from a trusted proxy')
  t.equal(trusted['true-client-ip'], '1.2.3.4', 'kept from a trusted proxy')
  t.notOk('x_real_ip' in trusted, 'an underscore spelling never passes')
  t.notOk('x-debug' in trusted || 'x_debug' in trusted, 'drop_headers never passes')
})
