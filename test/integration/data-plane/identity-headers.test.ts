// The identity headers (docs/security.md), for allowed requests: the upstream learns who is calling from
// the identity headers (named by `identity.header_prefix`), resolved at request
// time, plus X-Request-Id (the same id the client gets back) and the standard
// X-Forwarded-* headers. Authorization is forwarded only when configured.
import t from 'tap'
import type { Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { rawValues, type RecordedRequest } from '../../helpers/upstream.js'

/** The identity headers the upstream received, by lowercased name, each asserted to occur once. */
function identityOf (t: Test, req: RecordedRequest | undefined, prefix: string): Record<string, string> {
  const out: Record<string, string> = {}
  const raw = req?.rawHeaders ?? []
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = (raw[i] ?? '').toLowerCase()
    if (!name.startsWith(prefix.toLowerCase())) continue
    t.equal(out[name], undefined, `${name} sent once`)
    out[name] = raw[i + 1] ?? ''
  }
  return out
}

async function allowed (t: Test, gw: TestGateway, key: string, path = '/api/v1/users', headers: Record<string, string> = {}): Promise<{ req: RecordedRequest | undefined, requestId: string | undefined }> {
  const before = gw.upstream.requests.length
  const res = await gw.get(path, key, headers)
  t.equal(res.status, 200, 'allowed')
  t.equal(gw.upstream.requests.length, before + 1, 'forwarded once')
  return { req: gw.upstream.last(), requestId: res.headers['x-request-id'] }
}

t.test('default prefix X-Auth-', async (t) => {
  const gw = await startGateway(t)

  t.test('personal key: key id, type, user, org, role and request id', async (t) => {
    const { id, key } = await gw.fixtures.personalKey('alice')
    const { req, requestId } = await allowed(t, gw, key)
    t.same(identityOf(t, req, 'X-Auth-'), {
      'x-auth-key-id': id,
      'x-auth-key-type': 'personal',
      'x-auth-user-id': 'alice',
      'x-auth-org-id': 'acme',
      'x-auth-role': 'reader',
      'x-auth-env': 'live'
    }, 'exactly the identity headers of a personal key')
    t.ok(requestId !== undefined && requestId !== '', 'the response carries X-Request-Id')
    t.same(rawValues(req, 'x-request-id'), [requestId], 'the upstream gets the same X-Request-Id, once')
    t.same(rawValues(req, 'authorization'), [], 'Authorization not forwarded by default')
  })

  t.test('personal key: X-Auth-Role is the user\'s current role', async (t) => {
    const user = `u-${randomBytes(4).toString('hex')}`
    await gw.fixtures.user(user, 'acme', 'reader')
    const { key } = await gw.fixtures.personalKey(user)
    const first = await allowed(t, gw, key)
    t.equal(first.req?.headers['x-auth-role'], 'reader', 'before the change')
    await gw.fixtures.hset(gw.fixtures.keys.user(user), 'role', 'writer')
    const ms = await eventually(async () => {
      const res = await gw.get('/api/v1/users', key)
      return res.status === 200 && gw.upstream.last()?.headers['x-auth-role'] === 'writer'
    }, 3000, 10)
    t.ok(ms >= 0 && ms <= 1500, `the new role is sent within 1 s (took ${ms} ms)`)
    t.equal(gw.upstream.last()?.headers['x-auth-user-id'], user, 'same user')
  })

  t.test('BOT key: no user id, the key\'s own role and org', async (t) => {
    const { id, key } = await gw.fixtures.botKey('reader', 'globex', { createdBy: 'bob' })
    const { req, requestId } = await allowed(t, gw, key)
    t.same(identityOf(t, req, 'X-Auth-'), {
      'x-auth-key-id': id,
      'x-auth-key-type': 'bot',
      'x-auth-org-id': 'globex',
      'x-auth-role': 'reader',
      'x-auth-env': 'live'
    }, 'exactly the identity headers of a BOT key (no X-Auth-User-Id, not even its creator)')
    t.same(rawValues(req, 'x-request-id'), [requestId], 'same X-Request-Id')
  })

  t.test('each request gets its own request id', async (t) => {
    const { key } = await gw.fixtures.personalKey('alice')
    const a = await allowed(t, gw, key)
    const b = await allowed(t, gw, key)
    t.not(a.requestId, b.requestId, 'distinct ids')
    t.equal(a.req?.headers['x-request-id'], a.requestId)
    t.equal(b.req?.headers['x-request-id'], b.requestId)
  })

  t.test('X-Forwarded-For, -Proto and -Host are set', async (t) => {
    const { key } = await gw.fixtures.personalKey('alice')
    const { req } = await allowed(t, gw, key, '/api/v1/users', { Host: 'api.example.test:8443' })
    t.same(rawValues(req, 'x-forwarded-for'), ['127.0.0.1'], 'X-Forwarded-For: the client address')
    t.same(rawValues(req, 'x-forwarded-proto'), ['http'], 'X-Forwarded-Proto: the scheme the client used')
    t.same(rawValues(req, 'x-forwarded-host'), ['api.example.test:8443'], 'X-Forwarded-Host: the Host the client asked for')
    t.same(rawValues(req, 'host'), [new URL(gw.upstream.url).host], 'Host: the upstream\'s own, once')
  })
  t.end()
})

t.test('forward_authorization: true forwards the Authorization header unchanged', async (t) => {
  const gw = await startGateway(t, { yaml: 'identity: { header_prefix: X-Auth-, forward_authorization: true }\n' })
  const { id, key } = await gw.fixtures.personalKey('alice')
  const { req } = await allowed(t, gw, key)
  t.same(rawValues(req, 'authorization'), [`Bearer ${key}`], 'forwarded once, as sent')
  t.equal(req?.headers['x-auth-key-id'], id, 'identity headers still set')
  t.equal(req?.headers['x-auth-user-id'], 'alice')
})

t.test('a custom header_prefix names the identity headers', async (t) => {
  const gw = await startGateway(t, { yaml: 'identity: { header_prefix: X-Kg-, forward_authorization: false }\n' })

  t.test('personal key', async (t) => {
    const { id, key } = await gw.fixtures.personalKey('alice')
    const { req, requestId } = await allowed(t, gw, key)
    t.same(identityOf(t, req, 'X-Kg-'), {
      'x-kg-key-id': id,
      'x-kg-key-type': 'personal',
      'x-kg-user-id': 'alice',
      'x-kg-org-id': 'acme',
      'x-kg-role': 'reader',
      'x-kg-env': 'live'
    }, 'the identity headers under X-Kg-')
    t.same(identityOf(t, req, 'X-Auth-'), {}, 'nothing under the default prefix')
    t.same(rawValues(req, 'x-request-id'), [requestId], 'X-Request-Id keeps its name')
    t.same(rawValues(req, 'authorization'), [], 'Authorization not forwarded')
  })

  t.test('BOT key', async (t) => {
    const { id, key } = await gw.fixtures.botKey('admin', 'acme')
    const { req } = await allowed(t, gw, key)
    t.same(identityOf(t, req, 'X-Kg-'), {
      'x-kg-key-id': id,
      'x-kg-key-type': 'bot',
      'x-kg-org-id': 'acme',
      'x-kg-role': 'admin',
      'x-kg-env': 'live'
    }, 'the identity headers of a BOT key under X-Kg-')
  })
  t.end()
})
