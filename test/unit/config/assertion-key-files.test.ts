// The assertion's key files are checked with the rest of the configuration
// (src/config/assertion-key-files.ts, src/config/load.ts): a missing, unreadable or unfit file
// is a problem naming its setting (KEYGATE_ASSERTION_KEY_FILE, identity.assertion.key_file,
// identity.assertion.previous_key_files[i]), listed with every other problem, and never
// quoting the file's content.
import t from 'tap'
import { generateKeyPairSync } from 'node:crypto'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { assertionKeys, AssertionKeyError, readAssertionKeys } from '../../../src/config/assertion-key-files.js'
import { parseConfig } from '../../../src/config/load.js'
import { configProblems, MINIMAL_CONFIG } from '../../helpers/config.js'
import { writeKeyFile, writeTextFile } from '../../helpers/assertion-keys.js'

const ON = `${MINIMAL_CONFIG}identity: { assertion: { enabled: true } }\n`
const withFields = (fields: string): string => `${MINIMAL_CONFIG}identity: { assertion: { enabled: true, ${fields} } }\n`

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
const rsaPkcs8 = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
const files = {
  good: writeKeyFile('ES256'),
  rsa: writeTextFile('rsa.pem', rsaPkcs8),
  rsaPublic: writeTextFile('rsa.pub.pem', rsa.publicKey.export({ type: 'spki', format: 'pem' })),
  p384: writeTextFile('p384.pem', generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey.export({ type: 'pkcs8', format: 'pem' })),
  sec1: writeTextFile('sec1.pem', generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'sec1', format: 'pem' })),
  garbage: writeTextFile('garbage.pem', '-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n'),
  directory: mkdtempSync(join(tmpdir(), 'keygate-assertion-dir-')),
  missing: join(tmpdir(), 'keygate-assertion-no-such-file.pem')
}

t.test('on, with a good key: no problem; the variable names the file', async (t) => {
  const c = parseConfig(ON, { KEYGATE_ASSERTION_KEY_FILE: files.good.file })
  t.equal(c.identity.assertion.key_file, files.good.file)
  t.same(c.identity.assertion, { enabled: true, issuer: 'keygate', ttl_s: 60, bind: 'request', key_file: files.good.file, previous_key_files: [] }, 'the defaults')
  const keys = assertionKeys(c.identity.assertion)
  t.equal(keys?.alg, 'ES256')
  t.equal(keys?.publicKeys.length, 1)
})

t.test('the variable overrides identity.assertion.key_file', async (t) => {
  const text = withFields(`key_file: ${JSON.stringify(files.missing)}`)
  t.match(configProblems(text), [/^identity\.assertion\.key_file: cannot read .*: no such file$/], 'the field alone: named as the field')
  t.same(configProblems(text, { KEYGATE_ASSERTION_KEY_FILE: files.good.file }), [], 'the variable wins')
  t.equal(parseConfig(withFields(`key_file: ${JSON.stringify(files.good.file)}`)).identity.assertion.key_file, files.good.file, 'the field alone works')
})

t.test('each unfit signing key is a problem naming its setting', async (t) => {
  const rows: Array<[string, string, RegExp]> = [
    ['missing', files.missing, /^KEYGATE_ASSERTION_KEY_FILE: cannot read .*keygate-assertion-no-such-file\.pem: no such file$/],
    ['a directory', files.directory, /^KEYGATE_ASSERTION_KEY_FILE: cannot read .*: a directory$/],
    ['an RSA key', files.rsa, /^KEYGATE_ASSERTION_KEY_FILE: .*rsa\.pem holds a rsa key; keygate signs with Ed25519 \(EdDSA\) or P-256 \(ES256\) keys$/],
    ['a P-384 key', files.p384, /^KEYGATE_ASSERTION_KEY_FILE: .*holds a ec secp384r1 key/],
    ['a public key', files.good.publicFile, /^KEYGATE_ASSERTION_KEY_FILE: .* is not an unencrypted PEM PKCS#8 private key .*assertion-key generate/],
    ['a SEC1 (not PKCS#8) key', files.sec1, /^KEYGATE_ASSERTION_KEY_FILE: .* is not an unencrypted PEM PKCS#8 private key/],
    ['not a key', files.garbage, /^KEYGATE_ASSERTION_KEY_FILE: .*garbage\.pem does not hold a PEM key keygate can read$/]
  ]
  for (const [what, file, expected] of rows) {
    t.match(configProblems(ON, { KEYGATE_ASSERTION_KEY_FILE: file }), [expected], what)
  }
})

t.test('on without a key: the problem says how to get one', async (t) => {
  t.match(configProblems(ON), [/^identity\.assertion\.enabled: a signing key is needed: set KEYGATE_ASSERTION_KEY_FILE .*keygate assertion-key generate/])
})

t.test('previous_key_files: public or private PEM; each unfit one named by its index, all at once', async (t) => {
  t.same(configProblems(withFields(`previous_key_files: ${JSON.stringify([files.good.publicFile, files.good.file])}`), { KEYGATE_ASSERTION_KEY_FILE: files.good.file }), [])
  const problems = configProblems(withFields(`previous_key_files: ${JSON.stringify([files.good.publicFile, files.missing, files.rsaPublic])}`), { KEYGATE_ASSERTION_KEY_FILE: files.rsa })
  t.match(problems, [
    /^KEYGATE_ASSERTION_KEY_FILE: .*holds a rsa key/,
    /^identity\.assertion\.previous_key_files\[1\]: cannot read .*: no such file$/,
    /^identity\.assertion\.previous_key_files\[2\]: .*rsa\.pub\.pem holds a rsa key/
  ])
  t.equal(problems.length, 3)
  const body = rsaPkcs8.split('\n')[1] ?? ''
  t.ok(body.length > 20 && !problems.join('\n').includes(body), 'no line of a key in any message')
})

t.test('off, or not serving: the key files are not read', async (t) => {
  t.same(configProblems(`${MINIMAL_CONFIG}identity: { assertion: { enabled: false, previous_key_files: [${JSON.stringify(files.missing)}] } }\n`, { KEYGATE_ASSERTION_KEY_FILE: files.missing }), [], 'off')
  t.doesNotThrow(() => parseConfig(ON, { KEYGATE_ASSERTION_KEY_FILE: files.missing }, 'cli', { forServing: false }), 'registry commands never sign')
  t.same(readAssertionKeys({ enabled: false, issuer: 'keygate', ttl_s: 60, bind: 'request', key_file: files.missing, previous_key_files: [] }), { problems: [] })
})

t.test('the schema: bind, ttl_s, issuer, unknown fields', async (t) => {
  const env = { KEYGATE_ASSERTION_KEY_FILE: files.good.file }
  t.match(configProblems(withFields('bind: session'), env), [/^identity\.assertion\.bind: /])
  t.match(configProblems(withFields('ttl_s: 0'), env), [/^identity\.assertion\.ttl_s: /])
  t.match(configProblems(withFields('ttl_s: 3601'), env), [/^identity\.assertion\.ttl_s: /])
  t.match(configProblems(withFields('issuer: ""'), env), [/^identity\.assertion\.issuer: /])
  t.match(configProblems(withFields('key: secret'), env), ['identity.assertion.key: unknown field'])
  t.equal(parseConfig(withFields('bind: identity, ttl_s: 300, issuer: "https://gw.example"'), env).identity.assertion.bind, 'identity')
})

t.test('assertionKeys throws every problem at once', async (t) => {
  const a = { enabled: true, issuer: 'keygate', ttl_s: 60, bind: 'request' as const, key_file: files.missing, previous_key_files: [files.rsaPublic] }
  const err = t.throws(() => assertionKeys(a)) as AssertionKeyError
  t.type(err, AssertionKeyError)
  t.match(err.message, /KEYGATE_ASSERTION_KEY_FILE \/ identity\.assertion\.key_file: cannot read .*no such file/)
  t.match(err.message, /identity\.assertion\.previous_key_files\[0\]: .*holds a rsa key/)
})
