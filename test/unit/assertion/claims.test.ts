// The assertion's claims are JSON text built by concatenation (src/assertion/claims.ts):
// whatever an id, org, role, method or path holds, the text parses to exactly the claims
// meant, in the documented order, and no value can add or change another claim.
import t from 'tap'
import { assertionHeaderName, identityBoundClaims, identityClaims, issuerClaim, protectedHeader, requestClaims, subjectOf } from '../../../src/assertion/claims.js'
import type { Identity } from '../../../src/decision/identity.js'
import { NO_GRANTS } from '../../../src/registry/records.js'

const personal: Identity = { keyId: 'AbCd1234EfGh5678', type: 'personal', userId: 'alice', org: 'acme', role: 'reader', grants: NO_GRANTS }
const bot: Identity = { keyId: 'ZyXw9876VuTs5432', type: 'bot', userId: undefined, org: 'globex', role: 'deployer', grants: NO_GRANTS }

t.test('the header: the identity prefix + Assertion, as node names headers', async (t) => {
  t.equal(assertionHeaderName('X-Auth-'), 'x-auth-assertion')
  t.equal(assertionHeaderName('X-Kg-'), 'x-kg-assertion')
})

t.test('sub: the user of a personal key, bot:<keyId> for a BOT key', async (t) => {
  t.equal(subjectOf(personal), 'alice')
  t.equal(subjectOf(bot), 'bot:ZyXw9876VuTs5432')
})

t.test('request-bound claims: every claim, in order', async (t) => {
  const text = requestClaims(issuerClaim('keygate'), identityClaims(personal), 'GET', '/api/v1/users', 'req-1', 1700000000, 1700000060)
  t.equal(text, '{"iss":"keygate","sub":"alice","key_id":"AbCd1234EfGh5678","key_type":"personal","org":"acme","role":"reader","env":"live","htm":"GET","htu":"/api/v1/users","jti":"req-1","iat":1700000000,"exp":1700000060}')
})

t.test('identity-bound claims: no htm, htu or jti', async (t) => {
  const claims = JSON.parse(identityBoundClaims(issuerClaim('gw'), identityClaims(bot), 10, 70)) as Record<string, unknown>
  t.same(claims, { iss: 'gw', sub: 'bot:ZyXw9876VuTs5432', key_id: 'ZyXw9876VuTs5432', key_type: 'bot', org: 'globex', role: 'deployer', env: 'live', iat: 10, exp: 70 })
  t.same(Object.keys(claims), ['iss', 'sub', 'key_id', 'key_type', 'org', 'role', 'env', 'iat', 'exp'])
  t.match(JSON.parse(identityBoundClaims(issuerClaim('gw'), identityClaims({ ...bot, env: 'test' }), 10, 70)), { env: 'test' }, 'a test key\'s environment')
})

t.test('hostile values stay one string each: no claim can be added or replaced', async (t) => {
  const values = [
    '","role":"admin',
    'a"b\\c',
    '\\"},"x":{"',
    'line\nbreak\ttab\u0000nul',
    'ünïcødé ✓ 𝄞',
    'lone \ud800 surrogate',
    '</script><!--',
    ''
  ]
  for (const v of values) {
    const id: Identity = { keyId: v, type: 'personal', userId: v, org: v, role: v, grants: NO_GRANTS }
    const text = requestClaims(issuerClaim(v), identityClaims(id), v, v, v, 1, 2)
    const parsed = JSON.parse(text) as Record<string, unknown>
    t.same(Object.keys(parsed), ['iss', 'sub', 'key_id', 'key_type', 'org', 'role', 'env', 'htm', 'htu', 'jti', 'iat', 'exp'], `keys for ${JSON.stringify(v)}`)
    for (const k of ['iss', 'sub', 'key_id', 'org', 'role', 'htm', 'htu', 'jti']) t.equal(parsed[k], v, `${k} holds the value as given`)
    t.equal(parsed.key_type, 'personal')
    t.equal(parsed.iat, 1)
    t.equal(parsed.exp, 2)
    t.equal(Buffer.from(text).toString('utf8'), text, 'the text survives UTF-8 (JSON.stringify escapes a lone surrogate)')
  }
})

t.test('identity claims tell identities apart (they are the identity-bound cache key)', async (t) => {
  const variants: Identity[] = [
    personal,
    { ...personal, role: 'writer' },
    { ...personal, org: 'globex' },
    { ...personal, userId: 'bob' },
    { ...personal, keyId: 'other' },
    bot,
    // a personal key whose user is literally named like a BOT subject still differs by key_type and key_id
    { ...personal, userId: `bot:${bot.keyId}`, org: bot.org, role: bot.role }
  ]
  const texts = new Set(variants.map(identityClaims))
  t.equal(texts.size, variants.length)
})

t.test('protected header: alg, kid, typ JWT', async (t) => {
  t.equal(protectedHeader('EdDSA', 'k1'), '{"alg":"EdDSA","kid":"k1","typ":"JWT"}')
  t.equal(protectedHeader('ES256', 'k"2'), '{"alg":"ES256","kid":"k\\"2","typ":"JWT"}')
})
