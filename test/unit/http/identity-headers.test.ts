import t from 'tap'
import type { FastifyRequest } from 'fastify'
import type { IncomingHttpHeaders } from 'node:http'
import { createPublicKey, generateKeyPairSync } from 'node:crypto'
import { createAssertions, type Assertions } from '../../../src/assertion/assertions.js'
import { createHeaderRewriter, identityHeaders } from '../../../src/http/identity-headers.js'
import { trustedProxyProblem } from '../../../src/config/addresses.js'

const identity = { keyId: 'k1', type: 'personal' as const, userId: 'alice', org: 'acme', role: 'reader', grants: undefined as never }

function request (peer: string): FastifyRequest {
  return { id: 'req-1', protocol: 'http', headers: { host: 'gw.example' }, raw: { socket: { remoteAddress: peer } }, kg: { identity } } as unknown as FastifyRequest
}

t.test('identity headers first, then the client\'s, then the forwarding headers', async (t) => {
  const rewrite = createHeaderRewriter({ prefix: 'X-Auth-', forwardAuthorization: false, trustedProxies: [] })
  const out = rewrite(request('10.0.0.9'), { host: 'upstream', accept: '*/*', 7: 'digits', 'x-auth-role': 'admin' } as IncomingHttpHeaders)
  t.same(Object.keys(out), [
    'x-auth-key-id', 'x-auth-key-type', 'x-auth-user-id', 'x-auth-org-id', 'x-auth-role', 'x-auth-env', 'x-request-id',
    'accept', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host'
  ], 'a name made of digits is dropped: it would sort ahead of everything; Host is the upstream\'s (undici writes it)')
  t.equal(out['x-forwarded-host'], 'gw.example', 'the client\'s Host travels as X-Forwarded-Host')
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

t.test('every client header, in every spelling, by its verdict', async (t) => {
  const rewrite = createHeaderRewriter({ prefix: 'X-Auth-', forwardAuthorization: false, dropHeaders: ['X-Debug-Token'], trustedProxies: ['10.0.0.0/8', '2001:db8::/32'] })
  // [header name as received, kept from an untrusted peer, kept from a trusted proxy]
  const rows: Array<[string, boolean, boolean]> = [
    ['accept', true, true],
    ['content-type', true, true],
    ['x_custom', true, true],
    ['authorization', false, false],
    ['proxy-authorization', false, false],
    ['connection', false, false],
    ['keep-alive', false, false],
    ['te', false, false],
    ['transfer-encoding', false, false],
    ['upgrade', false, false],
    ['expect', false, false],
    ['x-request-id', false, false],
    ['x_request_id', false, false],
    ['x-http-method-override', false, false],
    ['x_http_method_override', false, false],
    ['x-method-override', false, false],
    ['x-auth-user-id', false, false],
    ['x_auth_user_id', false, false],
    ['x-auth-anything', false, false],
    ['x-debug-token', false, false],
    ['x_debug_token', false, false],
    ['42', false, false],
    ['forwarded', false, true],
    ['x-forwarded-proto', false, true],
    ['x-forwarded-host', false, true],
    ['x-forwarded-prefix', false, true],
    ['x-real-ip', false, true],
    ['x_real_ip', false, false],
    ['x_forwarded_for', false, false],
    ['cf-connecting-ip', false, true],
    ['x-original-method', false, true]
  ]
  const headers: IncomingHttpHeaders = Object.fromEntries(rows.map(([name]) => [name, 'client']))
  for (const [peer, trusted] of [['192.0.2.1', false], ['10.1.2.3', true], ['::ffff:10.1.2.3', true], ['2001:db8::7', true], ['2001:db9::7', false]] as const) {
    const out = rewrite(request(peer), headers)
    for (const [name, untrustedKeep, trustedKeep] of rows) {
      const kept = trusted ? trustedKeep : untrustedKeep
      t.equal(out[name] === 'client', kept, `${name} from ${peer}: ${kept ? 'kept' : 'dropped'}`)
    }
  }
})

t.test('the identity headers replace the client\'s, under the configured prefix', async (t) => {
  const rewrite = createHeaderRewriter({ prefix: 'X-Gw-', forwardAuthorization: true, trustedProxies: [] })
  const bot = { keyId: 'b1', type: 'bot' as const, userId: undefined, org: 'globex', role: 'deployer', grants: undefined as never }
  const req = { id: 'req-2', protocol: 'https', headers: { host: 'gw.example' }, raw: { socket: { remoteAddress: '192.0.2.1' } }, kg: { identity: bot } } as unknown as FastifyRequest
  const out = rewrite(req, { authorization: 'Bearer x', 'x-gw-user-id': 'alice', x_gw_role: 'admin', 'x-auth-role': 'other prefix' } as IncomingHttpHeaders)
  t.same({ ...out }, {
    'x-gw-key-id': 'b1',
    'x-gw-key-type': 'bot',
    'x-gw-org-id': 'globex',
    'x-gw-role': 'deployer',
    'x-gw-env': 'live',
    'x-request-id': 'req-2',
    authorization: 'Bearer x',
    'x-auth-role': 'other prefix',
    'x-forwarded-for': '192.0.2.1',
    'x-forwarded-proto': 'https',
    'x-forwarded-host': 'gw.example'
  }, 'a BOT key sends no user id, and the client\'s claims under the prefix are gone; authorization forwarded when configured')
  t.same(identityHeaders('X-Gw-', bot, 'req-2'), { 'x-gw-key-id': 'b1', 'x-gw-key-type': 'bot', 'x-gw-org-id': 'globex', 'x-gw-role': 'deployer', 'x-gw-env': 'live', 'x-request-id': 'req-2' }, 'what `keygate check` shows')
  t.equal(identityHeaders('X-Gw-', { ...bot, env: 'test' }, 'req-3')['x-gw-env'], 'test', 'a test key\'s environment')
})

t.test('the assertion: set with the identity headers, bound to the method, the decided path and the request id', async (t) => {
  const { privateKey } = generateKeyPairSync('ed25519')
  const assertions = await createAssertions(
    { enabled: true, issuer: 'keygate', ttl_s: 60, bind: 'request', previous_key_files: [] },
    { alg: 'EdDSA', privateKey, publicKeys: [{ alg: 'EdDSA', key: createPublicKey(privateKey) }] }
  ) as Assertions
  const rewrite = createHeaderRewriter({ prefix: 'X-Kg-', forwardAuthorization: false, trustedProxies: [], assertions })
  const req = { ...request('10.0.0.9'), method: 'PUT', kg: { identity, path: '/api/v1/users/7' } } as unknown as FastifyRequest
  const out = rewrite(req, { host: 'upstream', 'x-kg-assertion': 'forged', x_kg_assertion: 'forged' } as IncomingHttpHeaders)
  t.same(Object.keys(out).slice(0, 8), ['x-kg-key-id', 'x-kg-key-type', 'x-kg-user-id', 'x-kg-org-id', 'x-kg-role', 'x-kg-env', 'x-kg-assertion', 'x-request-id'], 'named by the prefix, among the gateway\'s own')
  t.notOk('x_kg_assertion' in out, 'the client\'s underscore spelling is dropped')
  const claims = JSON.parse(Buffer.from(String(out['x-kg-assertion']).split('.')[1] ?? '', 'base64url').toString()) as Record<string, unknown>
  t.match(claims, { sub: 'alice', htm: 'PUT', htu: '/api/v1/users/7', jti: 'req-1' })

  const anonymous = rewrite({ ...req, kg: { identity: undefined, path: '/x' } } as unknown as FastifyRequest, { 'x-kg-assertion': 'forged' } as IncomingHttpHeaders)
  t.notOk('x-kg-assertion' in anonymous, 'no identity, no assertion (and the client\'s is gone)')
})

t.test('forwarding headers: a trusted proxy\'s chain is extended, an untrusted peer\'s replaced', async (t) => {
  const rewrite = createHeaderRewriter({ prefix: 'X-Auth-', forwardAuthorization: false, trustedProxies: ['10.0.0.1'] })
  const client: IncomingHttpHeaders = { 'x-forwarded-for': '198.51.100.7', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'public.example' }
  const rows: Array<[string, Record<string, string>]> = [
    ['10.0.0.1', { 'x-forwarded-for': '198.51.100.7, 10.0.0.1', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'public.example' }],
    ['::ffff:10.0.0.1', { 'x-forwarded-for': '198.51.100.7, 10.0.0.1', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'public.example' }],
    ['10.0.0.2', { 'x-forwarded-for': '10.0.0.2', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'gw.example' }],
    ['::1', { 'x-forwarded-for': '::1', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'gw.example' }]
  ]
  for (const [peer, expected] of rows) t.match(rewrite(request(peer), client), expected, peer)
  const bare = rewrite(request('10.0.0.1'), {})
  t.match(bare, { 'x-forwarded-for': '10.0.0.1', 'x-forwarded-proto': 'http', 'x-forwarded-host': 'gw.example' }, 'a trusted proxy that sent none: the gateway\'s own')
})

t.test('trustedProxyProblem: addresses and CIDRs, IPv4 and IPv6', async (t) => {
  const rows: Array<[string, RegExp | undefined]> = [
    ['10.0.0.1', undefined],
    ['10.0.0.0/8', undefined],
    ['0.0.0.0/0', undefined],
    ['10.0.0.0/32', undefined],
    ['::1', undefined],
    ['2001:db8::/32', undefined],
    ['::/128', undefined],
    ['10.0.0.0/33', /invalid prefix length/],
    ['2001:db8::/129', /invalid prefix length/],
    ['10.0.0.0/', /invalid prefix length/],
    ['10.0.0.0/8a', /invalid prefix length/],
    ['10.0.0.0/-1', /invalid prefix length/],
    ['10.0.0.0/0008', /invalid prefix length/],
    ['10.0.0.0/8/8', /not an IP address or CIDR/],
    ['localhost', /not an IP address or CIDR/],
    ['10.0.0', /not an IP address or CIDR/],
    ['', /not an IP address or CIDR/]
  ]
  for (const [entry, problem] of rows) {
    const found = trustedProxyProblem(entry)
    if (problem === undefined) t.equal(found, undefined, entry)
    else t.match(found, problem, entry)
  }
})
