// The signer and the JWK Set (src/assertion/assertions.ts), in-process: tokens verify with
// jose against the JWK Set built once; `bind: identity` reuses a token until half its
// lifetime has passed and keeps a bounded number of them. Time is passed in, never read.
import t from 'tap'
import { createPublicKey } from 'node:crypto'
import { calculateJwkThumbprint, createLocalJWKSet, exportJWK, jwtVerify, type JWTPayload } from 'jose'
import { createAssertions, IDENTITY_TOKENS_KEPT, type Assertions } from '../../../src/assertion/assertions.js'
import type { AssertionKeys } from '../../../src/config/assertion-key-files.js'
import type { AssertionConfig } from '../../../src/config/schema.js'
import type { Identity } from '../../../src/decision/identity.js'
import { NO_GRANTS } from '../../../src/registry/records.js'
import { newPrivateKey, type Alg } from '../../helpers/assertion-keys.js'

const alice: Identity = { keyId: 'AbCd1234EfGh5678', type: 'personal', userId: 'alice', org: 'acme', role: 'reader', grants: NO_GRANTS }
const T0 = 1_700_000_000_250

function config (o: Partial<AssertionConfig> = {}): AssertionConfig {
  return { enabled: true, issuer: 'keygate', ttl_s: 60, bind: 'request', previous_key_files: [], ...o }
}

function keysOf (alg: Alg, previous: Alg[] = []): AssertionKeys {
  const privateKey = newPrivateKey(alg)
  return {
    alg,
    privateKey,
    publicKeys: [{ alg, key: createPublicKey(privateKey) }, ...previous.map((a) => ({ alg: a, key: createPublicKey(newPrivateKey(a)) }))]
  }
}

async function verify (a: Assertions, token: string, nowMs: number): Promise<JWTPayload> {
  const { payload } = await jwtVerify(token, createLocalJWKSet(a.jwks), { issuer: 'keygate', typ: 'JWT', algorithms: [a.alg], currentDate: new Date(nowMs) })
  return payload
}

t.test('off: no assertions, even with keys', async (t) => {
  t.equal(await createAssertions(config({ enabled: false }), keysOf('ES256')), undefined)
  await t.rejects(createAssertions(config(), undefined), /no signing key/, 'on without a key is refused')
})

for (const alg of ['EdDSA', 'ES256'] as const) {
  t.test(`${alg}: the JWK Set, built once`, async (t) => {
    const keys = keysOf(alg, ['EdDSA', 'ES256'])
    const a = await createAssertions(config(), keys) as Assertions
    t.equal(a.alg, alg)
    t.equal(a.jwks.keys.length, 3, 'the signing key and the two previous ones')
    const expected = await calculateJwkThumbprint(await exportJWK(createPublicKey(keys.privateKey)), 'sha256')
    t.equal(a.kid, expected, 'kid: the RFC 7638 thumbprint')
    t.equal(a.jwks.keys[0]?.kid, a.kid, 'the signing key first')
    t.same(a.jwks.keys.map((k) => k.alg), [alg, 'EdDSA', 'ES256'])
    t.ok(a.jwks.keys.every((k) => k.d === undefined && k.use === 'sig'), 'public signing keys only')
    t.same(JSON.parse(a.jwksJson), a.jwks, 'served as built')
  })

  t.test(`${alg}, bind request: a token per call, bound to the request`, async (t) => {
    const a = await createAssertions(config({ ttl_s: 45 }), keysOf(alg)) as Assertions
    const token = a.forRequest(alice, 'DELETE', '/api/v1/users/7', 'req-7', T0)
    const payload = await verify(a, token, T0)
    t.same(payload, { iss: 'keygate', sub: 'alice', key_id: alice.keyId, key_type: 'personal', org: 'acme', role: 'reader', env: 'live', htm: 'DELETE', htu: '/api/v1/users/7', jti: 'req-7', iat: 1_700_000_000, exp: 1_700_000_045 })
    await t.rejects(verify(a, token, T0 + 46_000), /exp/, 'expired after ttl_s')
    t.not(a.forRequest(alice, 'GET', '/api/v1/users/7', 'req-7', T0), token, 'another method, another token')
  })
}

t.test('bind identity: reused until half its lifetime, then renewed', async (t) => {
  const a = await createAssertions(config({ bind: 'identity' }), keysOf('ES256')) as Assertions
  const first = a.forRequest(alice, 'GET', '/a', 'r1', T0)
  t.same(await verify(a, first, T0), { iss: 'keygate', sub: 'alice', key_id: alice.keyId, key_type: 'personal', org: 'acme', role: 'reader', env: 'live', iat: 1_700_000_000, exp: 1_700_000_060 })
  t.equal(a.forRequest(alice, 'POST', '/b', 'r2', T0 + 10_000), first, 'reused for another request')
  t.equal(a.forRequest(alice, 'GET', '/a', 'r3', 1_700_000_029_999), first, 'reused until iat + ttl/2')
  const renewed = a.forRequest(alice, 'GET', '/a', 'r4', 1_700_000_030_000)
  t.not(renewed, first, 'renewed at iat + ttl/2')
  t.equal((await verify(a, renewed, 1_700_000_030_000)).iat, 1_700_000_030)
  t.equal(a.forRequest(alice, 'GET', '/a', 'r5', 1_700_000_030_500), renewed, 'the renewed token is reused in turn')
  const earlier = a.forRequest(alice, 'GET', '/a', 'r6', T0)
  t.not(earlier, renewed, 'a clock that went back gets a token of its own time')
  t.equal((await verify(a, earlier, T0)).iat, 1_700_000_000)

  const writer = a.forRequest({ ...alice, role: 'writer' }, 'GET', '/a', 'r7', T0)
  t.equal((await verify(a, writer, T0)).role, 'writer', 'a changed role gets its own token at once')
})

t.test('bind identity: identities whose fields would join to the same text get tokens of their own', async (t) => {
  const a = await createAssertions(config({ bind: 'identity' }), keysOf('ES256')) as Assertions
  // the registry's org, user and role may hold any text, the separators included
  const pairs: Array<[Identity, Identity]> = [
    [{ ...alice, org: 'a|b', role: 'c' }, { ...alice, org: 'a', role: 'b|c' }],
    [{ ...alice, userId: 'u|1:x', org: 'o' }, { ...alice, userId: 'u', org: '1:x|o' }],
    [{ ...alice, org: '3:abc', role: 'r' }, { ...alice, org: '3', role: ':abc|r' }],
    [{ ...alice, type: 'bot', userId: undefined }, { ...alice, type: 'personal', userId: '' }]
  ]
  for (const [one, other] of pairs) {
    const first = await verify(a, a.forRequest(one, 'GET', '/', 'r', T0), T0)
    const second = await verify(a, a.forRequest(other, 'GET', '/', 'r', T0), T0)
    t.same([first.sub, first.org, first.role, first.key_type], [one.type === 'bot' ? `bot:${one.keyId}` : one.userId, one.org, one.role, one.type])
    t.same([second.sub, second.org, second.role, second.key_type], [other.type === 'bot' ? `bot:${other.keyId}` : other.userId, other.org, other.role, other.type])
  }
})

t.test(`bind identity: at most ${IDENTITY_TOKENS_KEPT} tokens kept, the oldest dropped first`, async (t) => {
  // ES256 signatures are randomised, so a token signed again differs from the one kept
  const a = await createAssertions(config({ bind: 'identity' }), keysOf('ES256')) as Assertions
  const first = a.forRequest(alice, 'GET', '/', 'r', T0)
  const second = a.forRequest({ ...alice, keyId: 'second' }, 'GET', '/', 'r', T0)
  for (let i = 0; i < IDENTITY_TOKENS_KEPT - 1; i++) a.forRequest({ ...alice, keyId: `k${i}` }, 'GET', '/', 'r', T0)
  t.not(a.forRequest(alice, 'GET', '/', 'r', T0), first, 'the oldest was dropped, so signed again')
  t.equal(a.forRequest({ ...alice, keyId: 'k5' }, 'GET', '/', 'r', T0), a.forRequest({ ...alice, keyId: 'k5' }, 'GET', '/', 'r', T0), 'a recent one is kept')
  t.not(a.forRequest({ ...alice, keyId: 'second' }, 'GET', '/', 'r', T0), second, 'the next oldest made room for the first')
})
