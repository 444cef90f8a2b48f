import t from 'tap'
import { extractCredential, extractCredentialOrKeyHeader } from '../../../src/decision/extract-credential.js'

const table: Array<[string, string[], string]> = [
  ['no Authorization header', ['Host', 'x'], 'missing_credential'],
  ['another scheme', ['Authorization', 'Basic dXNlcjpwYXNz'], 'missing_credential'],
  ['Bearer', ['Authorization', 'Bearer abc_DEF-1.2~3+4/5=='], 'ok'],
  ['bearer, lower case', ['authorization', 'bearer abc'], 'ok'],
  ['BEARER, several spaces', ['AUTHORIZATION', 'BEARER    abc'], 'ok'],
  ['Bearer without a token', ['Authorization', 'Bearer'], 'malformed_credential'],
  ['Bearer and a space', ['Authorization', 'Bearer '], 'malformed_credential'],
  ['two tokens', ['Authorization', 'Bearer abc def'], 'malformed_credential'],
  ['a tab', ['Authorization', 'Bearer\tabc'], 'malformed_credential'],
  ['a non-token68 character', ['Authorization', 'Bearer ab"c'], 'malformed_credential'],
  ['padding in the middle', ['Authorization', 'Bearer ab=c'], 'malformed_credential'],
  ['an empty value', ['Authorization', ''], 'malformed_credential'],
  ['duplicated, both valid', ['Authorization', 'Bearer abc', 'authorization', 'Bearer abc'], 'malformed_credential'],
  ['duplicated, one another scheme', ['Authorization', 'Basic x', 'Authorization', 'Bearer abc'], 'malformed_credential']
]

for (const [why, raw, expected] of table) {
  t.test(why, async (t) => {
    const r = extractCredential(raw)
    t.equal(r.ok ? 'ok' : r.reason, expected)
    if (!r.ok) t.equal(r.invalidToken, expected === 'malformed_credential', 'invalid_token only for a malformed credential')
  })
}

t.test('the token is returned exactly', async (t) => {
  const r = extractCredential(['Authorization', 'Bearer  kg_abc'])
  t.same(r, { ok: true, token: 'kg_abc' })
})

t.test('a route\'s key header (lower-case name given): the key as its whole value', async (t) => {
  const table: Array<[string, string[], string]> = [
    ['the key header alone', ['ApiKey', 'kg_abc'], 'ok'],
    ['Authorization alone', ['Authorization', 'Bearer kg_abc'], 'ok'],
    ['neither', ['Host', 'x'], 'missing_credential'],
    ['both, the same key', ['Authorization', 'Bearer kg_abc', 'apikey', 'kg_abc'], 'two_credentials'],
    ['both, Authorization of another scheme', ['Authorization', 'Basic dXNlcjpwYXNz', 'apikey', 'kg_abc'], 'two_credentials'],
    ['the key header twice', ['apikey', 'kg_abc', 'APIKEY', 'kg_abc'], 'malformed_credential'],
    ['a scheme in the key header', ['apikey', 'Bearer kg_abc'], 'malformed_credential'],
    ['an empty key header', ['apikey', ''], 'malformed_credential'],
    ['a non-token68 character', ['apikey', 'kg_a"bc'], 'malformed_credential']
  ]
  for (const [why, raw, expected] of table) {
    const r = extractCredentialOrKeyHeader(raw, 'apikey')
    t.equal(r.ok ? 'ok' : r.reason, expected, why)
    if (r.ok) t.equal(r.token, 'kg_abc', `${why}: the token exactly`)
  }
})
