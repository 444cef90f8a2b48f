// The credential and key format stages and the 401 challenges (docs/errors.md): exactly one
// `Authorization` header, scheme Bearer in any case, one or more spaces, one token68
// token. A malformed key (wrong shape or checksum) is refused locally, without a
// single Redis command. 401 challenges carry `error="invalid_token"` whenever a
// Bearer credential (or a duplicated header) was sent, and no error attribute when
// there was no Authorization header or one with another scheme.
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { startGateway } from '../../helpers/gateway.js'
import { watchGatewayRedis } from '../../helpers/redis-monitor.js'
import { generateKey } from '../../../src/registry/key-format.js'

const gw = await startGateway(t)
const alice = await gw.fixtures.personalKey('alice') // users:read
const bob = await gw.fixtures.personalKey('bob')
const key = alice.key

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
const prefix = gw.config.keys.prefix
/** Another base62 character than `c`. */
const other = (c: string | undefined): string => c === 'a' ? 'b' : 'a'
function randomBase62 (n: number): string {
  return [...randomBytes(n)].map((b) => BASE62[b % 62]).join('')
}

// keys of the right shape that a local check must refuse
const lastCharChanged = key.slice(0, -1) + other(key.at(-1)) // checksum typo
const mid = prefix.length + 16 + 1 + 10 // a character inside the secret
const secretTypo = key.slice(0, mid) + other(key[mid]) + key.slice(mid + 1)
const randomShape = `${prefix}${randomBase62(16)}_${randomBase62(32)}${key.slice(-6)}`
const unknownKey = generateKey(prefix).key // well-formed, valid checksum, not in the registry

const UNAUTHORIZED = { error: { code: 'unauthorized', message: 'Invalid or missing authentication key', status: 401 } }
const NO_ERROR = 'Bearer realm="keygate"'
const INVALID_TOKEN = 'Bearer realm="keygate", error="invalid_token"'

interface Row {
  what: string
  headers: Array<[string, string]>
  status: 200 | 401
  /** the exact WWW-Authenticate of a 401 */
  challenge?: string
  /** refused before the registry: no Redis command at all */
  local?: true
}

const matrix: Row[] = [
  // the accepted spellings
  { what: 'Bearer and one space', headers: [['Authorization', `Bearer ${key}`]], status: 200 },
  { what: 'lower-case scheme', headers: [['Authorization', `bearer ${key}`]], status: 200 },
  { what: 'upper-case scheme', headers: [['Authorization', `BEARER ${key}`]], status: 200 },
  { what: 'mixed-case scheme', headers: [['Authorization', `bEaReR ${key}`]], status: 200 },
  { what: 'several spaces', headers: [['Authorization', `Bearer    ${key}`]], status: 200 },
  { what: 'lower-case header name', headers: [['authorization', `Bearer ${key}`]], status: 200 },

  // no credential, or another scheme: a challenge without an error attribute
  { what: 'no Authorization header', headers: [], status: 401, challenge: NO_ERROR, local: true },
  { what: 'Basic credentials', headers: [['Authorization', 'Basic dXNlcjpwYXNz']], status: 401, challenge: NO_ERROR, local: true },
  { what: 'Basic scheme carrying a valid key', headers: [['Authorization', `Basic ${key}`]], status: 401, challenge: NO_ERROR, local: true },
  { what: 'Token scheme carrying a valid key', headers: [['Authorization', `Token ${key}`]], status: 401, challenge: NO_ERROR, local: true },
  { what: 'the key as the whole header', headers: [['Authorization', key]], status: 401, challenge: NO_ERROR, local: true },
  { what: 'key in another header', headers: [['X-Api-Key', key]], status: 401, challenge: NO_ERROR, local: true },

  // duplicated headers: invalid_token, even when both are valid
  { what: 'the same valid key twice', headers: [['Authorization', `Bearer ${key}`], ['Authorization', `Bearer ${key}`]], status: 401, challenge: INVALID_TOKEN },
  { what: 'two valid keys', headers: [['Authorization', `Bearer ${key}`], ['Authorization', `Bearer ${bob.key}`]], status: 401, challenge: INVALID_TOKEN },
  { what: 'two headers in different case', headers: [['authorization', `Bearer ${key}`], ['AUTHORIZATION', `Bearer ${key}`]], status: 401, challenge: INVALID_TOKEN },
  { what: 'a valid key and a Basic header', headers: [['Authorization', `Bearer ${key}`], ['Authorization', 'Basic dXNlcjpwYXNz']], status: 401, challenge: INVALID_TOKEN },
  { what: 'a Basic header and a valid key', headers: [['Authorization', 'Basic dXNlcjpwYXNz'], ['Authorization', `Bearer ${key}`]], status: 401, challenge: INVALID_TOKEN },

  // a Bearer credential that is not exactly one token68
  { what: 'Bearer with no token', headers: [['Authorization', 'Bearer']], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'Bearer with two tokens', headers: [['Authorization', `Bearer ${key} ${key}`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'Bearer, key, then junk', headers: [['Authorization', `Bearer ${key} x`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'a non-token68 character (!)', headers: [['Authorization', `Bearer ${key}!`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'a non-token68 character (,)', headers: [['Authorization', `Bearer ${key},`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'a quoted key', headers: [['Authorization', `Bearer "${key}"`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'a tab instead of spaces', headers: [['Authorization', `Bearer\t${key}`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'a space and a tab', headers: [['Authorization', `Bearer \t${key}`]], status: 401, challenge: INVALID_TOKEN, local: true },
  // `Bearerkg_...` is one token: syntactically another auth-scheme (RFC 9110 section 11.4)
  { what: 'no space (Bearer glued to the key)', headers: [['Authorization', `Bearer${key}`]], status: 401, challenge: NO_ERROR, local: true },

  // step 3: a token68 that is not a well-formed key is refused locally
  { what: 'a short random token', headers: [['Authorization', 'Bearer abc123']], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'the key truncated by one character', headers: [['Authorization', `Bearer ${key.slice(0, -1)}`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'the key with one character more', headers: [['Authorization', `Bearer ${key}a`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'the key with another prefix', headers: [['Authorization', `Bearer zz${key.slice(2)}`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'a typo in the checksum', headers: [['Authorization', `Bearer ${lastCharChanged}`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'a typo in the secret', headers: [['Authorization', `Bearer ${secretTypo}`]], status: 401, challenge: INVALID_TOKEN, local: true },
  { what: 'a random string of the right shape, bad checksum', headers: [['Authorization', `Bearer ${randomShape}`]], status: 401, challenge: INVALID_TOKEN, local: true },

  // step 4: well-formed but unknown
  { what: 'a well-formed unknown key', headers: [['Authorization', `Bearer ${unknownKey}`]], status: 401, challenge: INVALID_TOKEN }
]

for (const row of matrix) {
  t.test(`${row.what} -> ${row.status}`, async (t) => {
    const before = gw.upstream.requests.length
    const { result: res, commands } = await watchGatewayRedis(gw, () => gw.send('GET', '/api/v1/users', row.headers))
    t.equal(res.status, row.status, 'status')
    if (row.status === 200) {
      t.equal(gw.upstream.requests.length, before + 1, 'forwarded')
      t.equal(res.headers['www-authenticate'], undefined, 'no challenge')
      return
    }
    t.same(res.json(), UNAUTHORIZED, 'uniform 401 body')
    t.equal(res.headers['www-authenticate'], row.challenge, 'WWW-Authenticate')
    t.equal(gw.upstream.requests.length, before, 'never forwarded')
    if (row.local === true) t.same(commands, [], 'no Redis command')
  })
}

t.test('control: an unknown well-formed key is looked up in Redis (the watch sees lookups)', async (t) => {
  const fresh = generateKey(prefix).key
  const { result: res, commands } = await watchGatewayRedis(gw, () => gw.get('/api/v1/users', fresh))
  t.equal(res.status, 401)
  t.not(commands.length, 0, 'the gateway asked Redis')
})

t.test('many random right-shaped keys never reach Redis', async (t) => {
  const { result: statuses, commands } = await watchGatewayRedis(gw, async () => {
    const out: number[] = []
    for (let i = 0; i < 20; i++) {
      const body = `${prefix}${randomBase62(16)}_${randomBase62(32)}`
      out.push((await gw.get('/api/v1/users', body + randomBase62(6))).status)
    }
    return out
  })
  t.same(statuses, Array(20).fill(401), 'all refused')
  t.same(commands, [], 'no Redis command')
})
