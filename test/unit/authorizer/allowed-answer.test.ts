// The authorizer's allowed answer, as every authorizer front end sends it: the identity
// headers, the request id, the trace context, the assertion bound to the path the proxy
// forwards, and the headers the proxy removes (those this answer does not set).
import t from 'tap'
import { allowedAnswer } from '../../../src/authorizer/allowed-answer.js'
import type { Assertions } from '../../../src/assertion/index.js'
import { parseConfig } from '../../../src/config/load.js'
import type { Identity } from '../../../src/decision/identity.js'
import { Grants, parseMeta, type Meta } from '../../../src/registry/records.js'
import { createTracing } from '../../../src/tracing/tracing.js'
import { MINIMAL_CONFIG } from '../../helpers/config.js'

const config = parseConfig(MINIMAL_CONFIG)
const alice: Identity = { keyId: 'k1', type: 'personal', userId: 'alice', org: 'acme', role: 'reader', grants: new Grants(['users:read']) }
const bot: Identity = { ...alice, keyId: 'k2', type: 'bot', userId: undefined, role: 'deployer' }
const signed: string[] = []
const assertions = {
  forRequest: (id: Identity, method: string, path: string, requestId: string) => {
    signed.push(`${id.keyId} ${method} ${path} ${requestId}`)
    return 'signed.token.here'
  }
} as unknown as Assertions

t.test('without the assertion: identity headers, request id, traceparent; the assertion header removed', async (t) => {
  const tracing = await createTracing(config.tracing, 'kg_')
  const write = allowedAnswer({ headerPrefix: 'X-Auth-', assertions: undefined, tracing })
  const trace = tracing.receive(['traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', 'tracestate', 'a=b'])
  const a = write(alice, 'req-1', trace, 'GET', '/api/v1/users?x=1', 0)
  t.equal(a.status, 200)
  t.match(a.headers, { 'x-auth-key-id': 'k1', 'x-auth-user-id': 'alice', 'x-auth-org-id': 'acme', 'x-request-id': 'req-1', tracestate: 'a=b' })
  t.match(a.headers.traceparent, /^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/, 'the client\'s trace, continued')
  t.notOk('x-auth-assertion' in a.headers)
  t.same(a.remove.names, ['authorization', 'x-auth-assertion', 'x-auth-identity', 'x-auth-meta'])
  t.equal(a.remove.list, 'authorization,x-auth-assertion,x-auth-identity,x-auth-meta')
  const b = write(bot, 'req-2', trace, 'GET', '/api/v1/users', 0)
  t.same(b.remove.names, ['authorization', 'x-auth-assertion', 'x-auth-user-id', 'x-auth-identity', 'x-auth-meta'], 'a BOT key sets no user: a client\'s own is removed')
  // a key of an identity, with meta (docs/identities.md): both set, so not removed
  const meta = parseMeta('{"plan":"pro"}') as Meta
  const c = write({ ...bot, identityId: 'cust-1', externalId: 'cus_42', meta }, 'req-2b', tracing.receive([]), 'GET', '/x', 0)
  t.equal(c.headers['x-auth-identity'], 'cus_42')
  t.equal(c.headers['x-auth-meta'], Buffer.from('{"plan":"pro"}').toString('base64url'))
  t.same(c.remove.names, ['authorization', 'x-auth-assertion', 'x-auth-user-id'], 'set, so not removed')
})

t.test('with the assertion: bound to the method and the path the proxy forwards, without its query', async (t) => {
  const tracing = await createTracing(config.tracing, 'kg_')
  const write = allowedAnswer({ headerPrefix: 'X-Auth-', assertions, tracing })
  const a = write(alice, 'req-3', tracing.receive([]), 'POST', '/api/v1/%7Eusers?x=1', 0)
  t.equal(a.headers['x-auth-assertion'], 'signed.token.here')
  t.same(signed, ['k1 POST /api/v1/%7Eusers req-3'])
  t.same(a.remove.names, ['authorization', 'x-auth-identity', 'x-auth-meta'], 'the assertion header is set, not removed')
})

t.test('anonymous (a public rule, no key): X-Auth-Anonymous, no identity or assertion, every identity header removed', async (t) => {
  const tracing = await createTracing(config.tracing, 'kg_')
  const before = signed.length
  const write = allowedAnswer({ headerPrefix: 'X-Auth-', assertions, tracing })
  const a = write(undefined, 'req-4', tracing.receive([]), 'GET', '/api/v1/health', 0)
  t.equal(a.headers['x-auth-anonymous'], 'true')
  t.notOk('x-auth-key-id' in a.headers || 'x-auth-assertion' in a.headers, 'no identity, no assertion')
  t.equal(signed.length, before, 'nothing signed')
  t.same(a.remove.names, ['authorization', 'x-auth-assertion', 'x-auth-key-id', 'x-auth-key-type', 'x-auth-user-id', 'x-auth-org-id', 'x-auth-role', 'x-auth-env', 'x-auth-identity', 'x-auth-meta'])
})

t.test('a route\'s key header is removed too', async (t) => {
  const tracing = await createTracing(config.tracing, 'kg_')
  const write = allowedAnswer({ headerPrefix: 'X-Auth-', assertions: undefined, tracing })
  t.same(write(alice, 'req-5', tracing.receive([]), 'GET', '/kong/x', 0, 'apikey').remove.names, ['authorization', 'x-auth-assertion', 'x-auth-identity', 'x-auth-meta', 'apikey'])
  t.equal(write(undefined, 'req-6', tracing.receive([]), 'GET', '/kong/x', 0, 'apikey').remove.list.endsWith(',apikey'), true)
})
