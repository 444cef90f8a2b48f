// The registry read's reply (HMGETs in a fixed order, flat) parses straight into
// records by the same rules as the object form (records.ts); a missing key, a key
// that is not valid and a missing user or role each keep their meaning.
import t from 'tap'
import { chainOf, userChainOf } from '../../../src/registry/registry-reader.js'
import {
  INVALID, KEY_FIELDS, keyRecordOf, NO_ORG_RECORD, orgRecordOf, parseKeyRecord, parseRoleRecord, parseUserRecord, roleRecordOf, userRecordOf, type KeyRecord
} from '../../../src/registry/records.js'
import { MALFORMED } from '../../../src/config/rate-limit.js'

const HASH = 'ab'.repeat(32)
type V = string | null
/** a reply: the key's 18 fields, user found + 3, role name, role found + 2, the org's 3, identity found + 6 */
function reply (o: { key?: Partial<Record<typeof KEY_FIELDS[number], V>>, user?: [V, V, V] | null, roleName?: string, role?: [V, V] | null, org?: V, identity?: [V, V, V, V, V, V] | null } = {}): Array<string | number | null> {
  const key = { type: 'personal', hash: HASH, org: 'acme', status: 'active', user: 'alice', role: null, expires_at: null, rate_limit: null, ...o.key }
  const user = o.user === undefined ? ['acme', 'reader', 'active'] : o.user
  const role = o.role === undefined ? ['users:read', null] : o.role
  const identity = o.identity === undefined ? null : o.identity
  return [
    ...KEY_FIELDS.map((f) => key[f] ?? null),
    user === null ? 0 : 1, ...(user ?? [null, null, null]),
    o.roleName ?? 'reader',
    role === null ? 0 : 1, ...(role ?? [null, null]),
    o.org ?? null, null, null,
    identity === null ? 0 : 1, ...(identity ?? [null, null, null, null, null, null])
  ]
}

t.test('a personal key, its user, role and org', async (t) => {
  const c = chainOf(reply())
  t.same(c.key, parseKeyRecord({ type: 'personal', hash: HASH, org: 'acme', status: 'active', user: 'alice' }))
  t.same(c.user, { org: 'acme', role: 'reader', status: 'active' })
  t.equal(c.roleName, 'reader')
  t.same(c.role?.permissions, ['users:read'])
  t.equal(c.role?.grants.has('users:read'), true)
  t.equal(c.org, NO_ORG_RECORD, 'an org without a limit (or without a record): NO_ORG_RECORD')
})

t.test('each shape of reply keeps its meaning', async (t) => {
  t.same(chainOf([]), { key: null, roleName: '', role: null, org: NO_ORG_RECORD }, 'an empty reply: no such key')
  t.equal(chainOf(reply({ key: { type: 'service' } })).key, INVALID, 'a key that is not valid')
  t.equal(chainOf(reply({ key: { type: null, hash: null, org: null, status: null, user: null } })).key, INVALID, 'a key hash with none of the fields: INVALID, not missing')
  t.equal(chainOf(reply({ user: null })).user, null, 'a personal key whose user does not exist')
  t.equal(chainOf(reply({ user: [null, null, null] })).user, INVALID, 'a user hash with none of the fields')
  t.equal(chainOf(reply({ user: ['acme', 'reader', 'suspended'] })).user, INVALID, 'a user of unknown status')
  t.same(chainOf(reply({ user: ['acme', 'reader', 'deactivated'] })).user, { org: 'acme', role: 'reader', status: 'deactivated' })
  const bot = chainOf(reply({ key: { type: 'bot', user: null, role: 'writer' }, user: null, roleName: 'writer' }))
  t.equal(bot.user, undefined, 'a BOT key has no user')
  t.match(bot.key, { type: 'bot', role: 'writer', user: undefined })
  t.equal(chainOf(reply({ role: null })).role, null, 'a role that does not exist')
  t.same(chainOf(reply({ role: [null, null] })).role?.permissions, [], 'a role with no permissions grants nothing')
  t.same(chainOf(reply({ org: '10/1s' })).org.rateLimit, { count: 10, periodMs: 1000, text: '10/1s' }, 'the org\'s limit')
  t.equal(chainOf(reply({ org: 'lots' })).org.rateLimit, MALFORMED, 'a malformed org limit allows nothing')
  t.equal(chainOf(reply({ key: { rate_limit: 'lots' } })).key !== INVALID && (chainOf(reply({ key: { rate_limit: 'lots' } })).key as { rateLimit: unknown }).rateLimit, MALFORMED, 'a malformed key limit')
  t.equal(chainOf(reply({ key: { expires_at: '2027-01-31T00:00:00Z' } })).key !== INVALID, true)
  t.equal(chainOf(reply({ key: { expires_at: 'soon' } })).key, INVALID, 'a garbage expires_at')
  t.same((chainOf(reply({ key: { scope: 'users:read', allowed_cidrs: '::1' } })).key as KeyRecord).restriction?.scope?.permissions, ['users:read'], 'the scope, read')
  t.equal(chainOf(reply({ key: { scope: 'Users' } })).key, INVALID, 'a scope outside the grammar')
  const named = { type: 'bot', user: null, role: 'reader', identity: 'cust-1' }
  t.equal(chainOf(reply({ key: named, user: null })).identity, null, 'a BOT key naming an identity that does not exist')
  t.match(chainOf(reply({ key: named, user: null, identity: ['acme', 'ext-1', null, '5/1s', null, null] })).identity, { org: 'acme' }, 'the identity it names, read')
  t.equal(chainOf(reply({ key: named, user: null, identity: [null, null, null, null, null, null] })).identity, INVALID, 'an identity hash with none of the fields')
  t.equal(chainOf(reply({ identity: ['acme', 'ext-1', null, null, null, null] })).identity, undefined, 'a key naming no identity reads none')
})

t.test('the positional parsers are the object parsers', async (t) => {
  const rows: Array<Record<string, string>> = [
    { type: 'personal', hash: HASH, org: 'acme', status: 'active', user: 'alice' },
    { type: 'bot', hash: HASH, org: 'acme', status: 'revoked', role: 'reader', rate_limit: '5/1m' },
    { type: 'bot', hash: HASH, org: 'acme', status: 'active' },
    { type: 'personal', hash: HASH.toUpperCase(), org: 'acme', status: 'active', user: 'alice' },
    { type: 'personal', hash: HASH, org: 'acme', status: 'active', user: 'alice', expires_at: '2027-01-31T00:00:00+02:00' },
    { type: 'personal', hash: HASH, org: 'acme', status: 'active', user: 'alice', scope: 'users:read', allowed_cidrs: '::1 10.0.0.0/8' },
    { type: 'bot', hash: HASH, org: 'acme', status: 'active', role: 'reader', allowed_cidrs: '10.0.0.0/33' }
  ]
  for (const f of rows) {
    t.same(keyRecordOf(f.type, f.hash, f.org, f.status, f.user, f.role, f.expires_at, f.rate_limit, f.scope, f.allowed_cidrs), parseKeyRecord(f), JSON.stringify(f))
    t.same(keyRecordOf(f.type ?? null, f.hash ?? null, f.org ?? null, f.status ?? null, f.user ?? null, f.role ?? null, f.expires_at ?? null, f.rate_limit ?? null, f.scope ?? null, f.allowed_cidrs ?? null), parseKeyRecord(f), 'nulls read as absent')
  }
  t.same(userRecordOf('acme', 'reader', 'active'), parseUserRecord({ org: 'acme', role: 'reader', status: 'active' }))
  t.equal(userRecordOf(null, 'reader', 'active'), INVALID)
  t.same(orgRecordOf('3/1s'), { rateLimit: { count: 3, periodMs: 1000, text: '3/1s' } })
})

t.test('role records are shared by their fields, never across different fields', async (t) => {
  t.equal(roleRecordOf('users:read', null), roleRecordOf('users:read', ''), 'the same fields: the same record')
  t.equal(roleRecordOf('users:read', null), parseRoleRecord({ permissions: 'users:read' }))
  const pairs: Array<[string, string]> = [['users:read 1/1s', ''], ['users:read', '1/1s'], ['users:read\n', '1/1s'], ['users:read', '\n1/1s']]
  const records = pairs.map(([p, r]) => roleRecordOf(p, r))
  t.equal(new Set(records).size, pairs.length, 'fields that concatenate alike stay apart')
  t.same(records[0]?.permissions, ['users:read', '1/1s'])
  t.equal(records[0]?.rateLimit, undefined)
  t.same(records[1]?.rateLimit, { count: 1, periodMs: 1000, text: '1/1s' })
})

t.test('a user\'s read (an SSO session): the user and its role, each missing or not', async (t) => {
  const c = userChainOf([1, 'acme', 'reader', 'active', 1, 'users:read keygate:keys:self', null])
  t.same(c.user, { org: 'acme', role: 'reader', status: 'active' })
  t.same(c.role?.permissions, ['users:read', 'keygate:keys:self'])
  t.same(userChainOf([0, null, null, null, 0, null, null]), { user: null, role: null }, 'no such user')
  t.same(userChainOf([1, 'acme', 'gone', 'active', 0, null, null]).role, null, 'a user whose role does not exist: no role (no grants)')
  t.equal(userChainOf([1, 'acme', 'reader', 'retired', 1, 'users:read', null]).user, INVALID, 'an unknown status is not valid')
})
