// The signed identity assertion (docs/assertion.md): with identity.assertion on, every allowed request reaches its
// upstream with `X-Auth-Assertion`, a JWS the upstream verifies against the JWK Set the
// admin listener serves, fetched over HTTP as an upstream would (jose's
// createRemoteJWKSet). Bound to the forwarded method, path and request id
// (`bind: request`), or reused per identity (`bind: identity`). A client's own
// X-Auth-Assertion, in any spelling, never reaches an upstream.
import t from 'tap'
import type { Test } from 'tap'
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import type { HeaderList } from '../../helpers/raw-http.js'
import { rawValues, type RecordedRequest } from '../../helpers/upstream.js'
import { writeKeyFile, type Alg, type KeyFile } from '../../helpers/assertion-keys.js'

function assertionYaml (o: { bind?: string, issuer?: string, ttl_s?: number, previous?: string[] } = {}): string {
  return `identity:
  header_prefix: X-Auth-
  assertion:
    enabled: true
    bind: ${o.bind ?? 'request'}
${o.issuer === undefined ? '' : `    issuer: ${JSON.stringify(o.issuer)}\n`}${o.ttl_s === undefined ? '' : `    ttl_s: ${o.ttl_s}\n`}    previous_key_files: ${JSON.stringify(o.previous ?? [])}
`
}

async function gatewayWith (t: Test, key: KeyFile, o: Parameters<typeof assertionYaml>[0] & { gw?: TestGateway } = {}): Promise<TestGateway> {
  return await startGateway(t, {
    yaml: assertionYaml(o),
    env: { KEYGATE_ASSERTION_KEY_FILE: key.file },
    ...(o.gw === undefined ? {} : { redis: o.gw.redis, prefix: o.gw.prefix, seed: false })
  })
}

function jwksOf (gw: TestGateway): ReturnType<typeof createRemoteJWKSet> {
  return createRemoteJWKSet(new URL(`http://127.0.0.1:${gw.adminPort}/.well-known/jwks.json`))
}

interface Forwarded { req: RecordedRequest, token: string, requestId: string }

/** One allowed request; what the upstream got, and its single assertion. */
async function forwarded (t: Test, gw: TestGateway, method: string, target: string, key: string, extra: HeaderList = []): Promise<Forwarded> {
  const before = gw.upstream.requests.length
  const headers: Array<[string, string]> = [['Authorization', `Bearer ${key}`], ...(Array.isArray(extra) ? extra : Object.entries(extra))]
  const res = await gw.send(method, target, headers)
  t.equal(res.status, 200, `${method} ${target} allowed`)
  t.equal(gw.upstream.requests.length, before + 1, 'forwarded once')
  const req = gw.upstream.last() as RecordedRequest
  const tokens = rawValues(req, 'x-auth-assertion')
  t.equal(tokens.length, 1, 'exactly one X-Auth-Assertion upstream')
  const requestId = res.headers['x-request-id'] ?? ''
  t.same(rawValues(req, 'x-request-id'), [requestId], 'the upstream got the request id the client got')
  return { req, token: tokens[0] ?? '', requestId }
}

async function verified (gw: TestGateway, token: string, alg: Alg, issuer = 'keygate'): Promise<{ payload: JWTPayload, kid: string | undefined }> {
  const { payload, protectedHeader } = await jwtVerify(token, jwksOf(gw), { issuer, typ: 'JWT', algorithms: [alg] })
  return { payload, kid: protectedHeader.kid }
}

for (const alg of ['EdDSA', 'ES256'] as const) {
  t.test(`bind: request, ${alg}`, async (t) => {
    const key = writeKeyFile(alg)
    const issuer = alg === 'ES256' ? 'https://gateway.example.test' : undefined
    const ttl = alg === 'ES256' ? 30 : 60
    const gw = await gatewayWith(t, key, alg === 'ES256' ? { issuer, ttl_s: ttl } : {})
    const iss = issuer ?? 'keygate'

    t.test('the JWK Set: public, cacheable for minutes, this key alone', async (t) => {
      const res = await gw.admin('GET', '/.well-known/jwks.json')
      t.equal(res.status, 200, 'no credential needed')
      t.match(res.headers['content-type'], /^application\/json/)
      const maxAge = Number(/max-age=(\d+)/.exec(res.headers['cache-control'] ?? '')?.[1])
      t.ok(maxAge >= 60 && maxAge <= 900, `Cache-Control max-age of a few minutes (${res.headers['cache-control']})`)
      t.match(res.headers['cache-control'], /public/)
      const jwks = res.json() as { keys: Array<Record<string, unknown>> }
      t.equal(jwks.keys.length, 1, 'one key')
      const jwk = jwks.keys[0] ?? {}
      t.equal(jwk.alg, alg)
      t.equal(jwk.use, 'sig')
      t.equal(jwk.kty, alg === 'EdDSA' ? 'OKP' : 'EC')
      t.equal(jwk.crv, alg === 'EdDSA' ? 'Ed25519' : 'P-256')
      t.equal(jwk.d, undefined, 'no private part')
      t.match(jwk.kid, /^[A-Za-z0-9_-]{43}$/, 'kid: a SHA-256 thumbprint, base64url')
      t.equal(gw.app.assertions?.kid, jwk.kid, 'the kid tokens carry')
    })

    t.test('personal key: every claim, verified against the served JWK Set', async (t) => {
      const { id, key: apiKey } = await gw.fixtures.personalKey('alice')
      const before = Math.floor(Date.now() / 1000)
      const { req, token, requestId } = await forwarded(t, gw, 'GET', '/api/v1/users?page=2&q=x', apiKey)
      const after = Math.floor(Date.now() / 1000)
      const header = decodeProtectedHeader(token)
      t.same(Object.keys(header).sort(), ['alg', 'kid', 'typ'], 'header: alg, kid, typ')
      t.equal(header.alg, alg)
      t.equal(header.typ, 'JWT')
      const { payload, kid } = await verified(gw, token, alg, iss)
      t.equal(kid, gw.app.assertions?.kid)
      t.same(payload, {
        iss,
        sub: 'alice',
        key_id: id,
        key_type: 'personal',
        org: 'acme',
        role: 'reader',
        env: 'live',
        htm: 'GET',
        htu: '/api/v1/users',
        jti: requestId,
        iat: payload.iat,
        exp: payload.exp
      }, 'exactly these claims')
      t.equal(req.url, '/api/v1/users?page=2&q=x', 'the query went upstream, but htu has none')
      t.equal(payload.jti, req.headers['x-request-id'], 'jti is the X-Request-Id the upstream received')
      const iat = payload.iat as number
      t.ok(iat >= before && iat <= after, 'iat: when the request was allowed')
      t.equal((payload.exp as number) - iat, ttl, `exp - iat = ttl_s (${ttl})`)
    })

    t.test('BOT key: sub is bot:<key id>', async (t) => {
      const { id, key: apiKey } = await gw.fixtures.botKey('orgreader', 'globex')
      const { req, token, requestId } = await forwarded(t, gw, 'GET', '/api/v1/orgs/globex/projects', apiKey)
      const { payload } = await verified(gw, token, alg, iss)
      t.match(payload, { sub: `bot:${id}`, key_id: id, key_type: 'bot', org: 'globex', role: 'orgreader', htm: 'GET', htu: '/api/v1/orgs/globex/projects', jti: requestId })
      t.equal(req.url, payload.htu)
    })

    t.test('htm and htu are what was forwarded: HEAD, and a path with %61 decoded', async (t) => {
      const { key: apiKey } = await gw.fixtures.personalKey('alice')
      const head = await forwarded(t, gw, 'HEAD', '/api/v1/open/report', apiKey)
      t.equal(head.req.method, 'HEAD')
      const h = (await verified(gw, head.token, alg, iss)).payload
      t.equal(h.htm, 'HEAD', 'htm: HEAD')
      t.equal(h.htu, '/api/v1/open/report')
      t.equal(h.jti, head.requestId)

      const decoded = await forwarded(t, gw, 'GET', '/api/v1/open/%61bc', apiKey)
      t.equal(decoded.req.url, '/api/v1/open/abc', 'the upstream got the decoded path')
      const d = (await verified(gw, decoded.token, alg, iss)).payload
      t.equal(d.htu, decoded.req.url, 'htu: the path the upstream got')
      t.equal(d.htm, decoded.req.method)
    })

    t.test('each request its own token; a changed claim does not verify', async (t) => {
      const { key: apiKey } = await gw.fixtures.personalKey('alice')
      const a = await forwarded(t, gw, 'GET', '/api/v1/users', apiKey)
      const b = await forwarded(t, gw, 'GET', '/api/v1/users', apiKey)
      t.not(a.token, b.token)
      t.not((await verified(gw, a.token, alg, iss)).payload.jti, (await verified(gw, b.token, alg, iss)).payload.jti)
      const [head, claims, signature] = a.token.split('.') as [string, string, string]
      const forged = Buffer.from(Buffer.from(claims, 'base64url').toString().replace('"role":"reader"', '"role":"admin"')).toString('base64url')
      t.not(forged, claims)
      await t.rejects(verified(gw, `${head}.${forged}.${signature}`, alg, iss), 'the signature covers the claims')
    })

    t.test('a refused request reaches no upstream, so carries no assertion', async (t) => {
      const before = gw.upstream.requests.length
      const res = await gw.get('/api/v1/users', 'kg_not-a-key')
      t.equal(res.status, 401)
      t.equal(gw.upstream.requests.length, before)
    })
  })
}

t.test('bind: identity: one token per key and role, reused; no htm, htu, jti', async (t) => {
  const key = writeKeyFile('ES256')
  const gw = await gatewayWith(t, key, { bind: 'identity' })
  const alice = await gw.fixtures.personalKey('alice')
  const bot = await gw.fixtures.botKey('reader', 'acme')

  const first = await forwarded(t, gw, 'GET', '/api/v1/users', alice.key)
  const second = await forwarded(t, gw, 'HEAD', '/api/v1/open/other', alice.key)
  t.equal(second.token, first.token, 'the same token for two requests of one key (another method and path)')
  const { payload } = await verified(gw, first.token, 'ES256')
  t.same(payload, { iss: 'keygate', sub: 'alice', key_id: alice.id, key_type: 'personal', org: 'acme', role: 'reader', env: 'live', iat: payload.iat, exp: payload.exp }, 'identity claims and times only')
  t.equal((payload.exp as number) - (payload.iat as number), 60)

  const other = await forwarded(t, gw, 'GET', '/api/v1/users', bot.key)
  t.not(other.token, first.token, 'another key, another token')
  t.match((await verified(gw, other.token, 'ES256')).payload, { sub: `bot:${bot.id}`, key_type: 'bot' })
})

t.test('a client-sent X-Auth-Assertion never reaches the upstream, in any spelling', async (t) => {
  const spellings: Array<[string, string]> = [
    ['X-Auth-Assertion', 'forged-1'],
    ['x-auth-assertion', 'forged-2'],
    ['X-AUTH-ASSERTION', 'forged-3'],
    ['X_Auth_Assertion', 'forged-4'],
    ['x-auth_assertion', 'forged-5']
  ]
  const sentHere = (req: RecordedRequest): string[] => {
    const out: string[] = []
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      if ((req.rawHeaders[i] ?? '').toLowerCase().replace(/_/g, '-') === 'x-auth-assertion') out.push(req.rawHeaders[i + 1] ?? '')
    }
    return out
  }

  t.test('assertions on: only the gateway\'s own, which verifies', async (t) => {
    const key = writeKeyFile('EdDSA')
    const gw = await gatewayWith(t, key)
    const { key: apiKey } = await gw.fixtures.personalKey('alice')
    const { req, token } = await forwarded(t, gw, 'GET', '/api/v1/users', apiKey, spellings)
    t.same(sentHere(req), [token], 'one assertion, in one spelling')
    t.notMatch(token, /forged/)
    t.match((await verified(gw, token, 'EdDSA')).payload, { sub: 'alice' })
  })

  t.test('assertions off: none at all', async (t) => {
    const gw = await startGateway(t)
    const { key: apiKey } = await gw.fixtures.personalKey('alice')
    const res = await gw.send('GET', '/api/v1/users', [['Authorization', `Bearer ${apiKey}`], ...spellings])
    t.equal(res.status, 200)
    const req = gw.upstream.last() as RecordedRequest
    t.same(sentHere(req), [], 'every spelling removed')
    t.notMatch(JSON.stringify(req.rawHeaders), /forged/)
  })
})

t.test('assertions off: /.well-known/jwks.json is the admin listener\'s 404', async (t) => {
  const gw = await startGateway(t)
  const res = await gw.admin('GET', '/.well-known/jwks.json')
  t.equal(res.status, 404)
  t.same(res.json(), { error: { code: 'not_found', message: 'Resource not found', status: 404 } })
  t.equal(gw.app.assertions, undefined)
})

t.test('rotation: the previous key stays in the JWK Set, and its tokens still verify', async (t) => {
  const oldKey = writeKeyFile('EdDSA')
  const newKey = writeKeyFile('ES256')
  // an instance still on the old key, and one deployed with the new key and the old one's public file
  const before = await gatewayWith(t, oldKey)
  const after = await gatewayWith(t, newKey, { previous: [oldKey.publicFile], gw: before })
  const oldKid = before.app.assertions?.kid
  const newKid = after.app.assertions?.kid
  t.ok(oldKid !== undefined && newKid !== undefined && oldKid !== newKid, 'two kids')

  const jwks = (await after.admin('GET', '/.well-known/jwks.json')).json() as { keys: Array<{ kid: string, alg: string }> }
  t.same(jwks.keys.map((k) => [k.kid, k.alg]), [[newKid, 'ES256'], [oldKid, 'EdDSA']], 'the new key first, then the previous one')

  const { key: apiKey } = await before.fixtures.personalKey('alice')
  const signedByOld = await forwarded(t, before, 'GET', '/api/v1/users', apiKey)
  const signedByNew = await forwarded(t, after, 'GET', '/api/v1/users', apiKey)
  const old = await jwtVerify(signedByOld.token, jwksOf(after), { issuer: 'keygate', typ: 'JWT', algorithms: ['EdDSA', 'ES256'] })
  t.equal(old.protectedHeader.kid, oldKid, 'a token of the old key verifies against the new JWK Set')
  const fresh = await jwtVerify(signedByNew.token, jwksOf(after), { issuer: 'keygate', typ: 'JWT', algorithms: ['EdDSA', 'ES256'] })
  t.equal(fresh.protectedHeader.kid, newKid)
  await t.rejects(jwtVerify(signedByNew.token, jwksOf(before), { issuer: 'keygate' }), 'the old instance\'s JWK Set does not know the new key')
})

t.test('a private key file works as a previous key too (its public half is served)', async (t) => {
  const oldKey = writeKeyFile('ES256')
  const newKey = writeKeyFile('ES256')
  const gw = await gatewayWith(t, newKey, { previous: [oldKey.file, newKey.publicFile] })
  const jwks = (await gw.admin('GET', '/.well-known/jwks.json')).json() as { keys: Array<Record<string, unknown>> }
  t.equal(jwks.keys.length, 2, 'the current key listed again as a previous one is served once')
  t.ok(jwks.keys.every((k) => k.d === undefined), 'no private part')
})
