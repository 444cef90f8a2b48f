import t from 'tap'
import { readFileSync } from 'node:fs'
import { generateKey, hashSecret, keyPattern, parseKey, secretMatches } from '../../../src/registry/key-format.js'

t.test('a generated key parses back to its id, and only the secret\'s SHA-256 is kept', async (t) => {
  const k = generateKey('kg_')
  t.match(k.key, /^kg_[0-9A-Za-z]{16}_[0-9A-Za-z]{38}$/)
  const parsed = parseKey(k.key, 'kg_')
  if (typeof parsed === 'string') throw new Error(parsed)
  t.equal(parsed.id, k.id)
  t.equal(k.hash, hashSecret(parsed.secret))
  t.match(k.hash, /^[0-9a-f]{64}$/)
  t.notOk(k.key.includes(k.hash))
  const digest = Buffer.from(k.hash, 'hex').toString('latin1')
  t.equal(digest.length, 32)
  t.ok(secretMatches(parsed.secret, digest))
  t.notOk(secretMatches(parsed.secret.replace(/.$/, (c) => c === 'a' ? 'b' : 'a'), digest))
  for (const i of [0, 15, 31]) {
    const flipped = digest.slice(0, i) + String.fromCharCode(digest.charCodeAt(i) ^ 1) + digest.slice(i + 1)
    t.notOk(secretMatches(parsed.secret, flipped), `a digest differing only in byte ${i} does not match`)
  }
  t.notOk(secretMatches(parsed.secret, digest.slice(0, 31)), 'a stored digest of the wrong length never matches')
  t.notOk(secretMatches(parsed.secret, ''), 'nor does an empty one')
})

t.test('the secret carries at least 160 bits', async (t) => {
  const parsed = parseKey(generateKey('kg_').key, 'kg_')
  if (typeof parsed === 'string') throw new Error(parsed)
  t.ok(parsed.secret.length * Math.log2(62) >= 160)
})

t.test('keys are distinct', async (t) => {
  const seen = new Set<string>()
  for (let i = 0; i < 1000; i++) seen.add(generateKey('kg_').id)
  t.equal(seen.size, 1000)
})

t.test('local checks refuse malformed keys and every single-character typo', async (t) => {
  const k = generateKey('kg_').key
  t.equal(parseKey(k, 'other_'), 'malformed_credential', 'wrong prefix')
  t.equal(parseKey(k.slice(0, -1), 'kg_'), 'malformed_credential', 'too short')
  t.equal(parseKey(k + 'a', 'kg_'), 'malformed_credential', 'too long')
  t.equal(parseKey(k.replace(/_([^_]*)$/, '-$1'), 'kg_'), 'malformed_credential', 'no separator')
  t.equal(parseKey('kg_' + '!'.repeat(k.length - 3), 'kg_'), 'malformed_credential', 'not base62')
  // one character outside base62 in the id, the secret or the checksum; ASCII or not
  for (const [at, c] of [[3, '-'], [25, '+'], [k.length - 1, '='], [30, '\u00e9'], [k.length - 2, '\u0130']] as const) {
    t.equal(parseKey(k.slice(0, at) + c + k.slice(at + 1), 'kg_'), 'malformed_credential', `${JSON.stringify(c)} at ${at}`)
  }
  let typos = 0
  for (let i = 3; i < k.length; i++) {
    if (k[i] === '_') continue
    const typo = k.slice(0, i) + (k[i] === 'x' ? 'y' : 'x') + k.slice(i + 1)
    if (parseKey(typo, 'kg_') === 'bad_checksum') typos++
  }
  t.equal(typos, k.length - 4, 'each typo fails the checksum')
})

t.test('a custom prefix', async (t) => {
  const k = generateKey('acme_')
  t.ok(k.key.startsWith('acme_'))
  t.not(typeof parseKey(k.key, 'acme_'), 'string')
})

t.test('the regular expression docs/leaks.md gives scanners matches every generated key and no near miss', async (t) => {
  const doc = readFileSync(new URL('../../../docs/leaks.md', import.meta.url), 'utf8')
  // the line right after "the regular expression for a whole key is, exactly:" and its code fence
  const stated = /is, exactly:\n\n```\n(.+)\n```/.exec(doc)?.[1]
  t.equal(stated, keyPattern('kg_'), 'the docs state the pattern the code derives from the key format')
  const whole = new RegExp(`^(?:${stated ?? '(?!)'})$`)
  for (let i = 0; i < 500; i++) {
    const { key } = generateKey('kg_')
    if (!whole.test(key)) t.fail(`a generated key does not match: ${key.slice(0, 19)}...`)
  }
  const { key } = generateKey('kg_')
  const nearMisses = {
    'one character short': key.slice(0, -1),
    'one character long': key + 'a',
    'another prefix': 'kx_' + key.slice(3),
    'the prefix in capitals': 'KG_' + key.slice(3),
    'no separator after the id': key.slice(0, 19) + 'a' + key.slice(20),
    'a non-base62 character in the secret': key.slice(0, 25) + '-' + key.slice(26),
    'an id one character short': key.slice(0, 18) + key.slice(19) + 'a'
  }
  for (const [what, miss] of Object.entries(nearMisses)) t.notOk(whole.test(miss), what)
  t.equal(keyPattern('acme_'), 'acme_[0-9A-Za-z]{16}_[0-9A-Za-z]{38}', 'another prefix, the same shape')
})
