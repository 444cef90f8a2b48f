// The registry's hashes parse once, into typed records; anything unexpected is INVALID.
// A wildcard grant never reaches the reserved `keygate:` namespace.
import t from 'tap'
import {
  AddressList, cidrProblems, fieldsOf, flatCopy, Grants, INVALID, isoTimestamp, NO_GRANTS, parseKeyRecord, parseRoleRecord, parseTimestamp, parseUserRecord,
  scopedGrants, type KeyRecord
} from '../../../src/registry/records.js'

const HASH = 'ab'.repeat(32)
const PERSONAL = { type: 'personal', hash: HASH, org: 'acme', user: 'alice', name: 'laptop', status: 'active', created_at: '2025-01-01T00:00:00Z', created_by: 'cli:test' }
const BOT = { ...PERSONAL, type: 'bot', user: undefined, role: 'reader' }

/** a record merged over a well-formed one; `undefined` deletes the field */
function fields (base: Record<string, string | undefined>, over: Record<string, string | undefined> = {}): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries({ ...base, ...over })) if (value !== undefined) out[name] = value
  return out
}

t.test('parseKeyRecord: well-formed records', async (t) => {
  t.same(parseKeyRecord(fields(PERSONAL)), {
    type: 'personal', digest: Buffer.from(HASH, 'hex').toString('latin1'), org: 'acme', user: 'alice', role: undefined, status: 'active', expiresAt: undefined, env: 'live'
  }, 'personal: the user, never a role')
  t.same(parseKeyRecord(fields(BOT)), {
    type: 'bot', digest: Buffer.from(HASH, 'hex').toString('latin1'), org: 'acme', user: undefined, role: 'reader', status: 'active', expiresAt: undefined, env: 'live'
  }, 'BOT: the role, never a user')
  const cases: Array<[string, Record<string, string | undefined>, Record<string, unknown>]> = [
    ['revoked', { status: 'revoked' }, { status: 'revoked' }],
    ['expires_at in Z', { expires_at: '2027-01-31T00:00:00Z' }, { expiresAt: Date.UTC(2027, 0, 31) }],
    ['expires_at with an offset', { expires_at: '2027-01-31T02:00:00+02:00' }, { expiresAt: Date.UTC(2027, 0, 31) }],
    ['expires_at with fractions', { expires_at: '2027-01-31T00:00:00.250Z' }, { expiresAt: Date.UTC(2027, 0, 31) + 250 }],
    ['empty expires_at: never expires', { expires_at: '' }, { expiresAt: undefined }],
    ['a personal key ignores a stray role', { role: 'admin' }, { user: 'alice', role: undefined }],
    ['unknown extra fields are ignored', { colour: 'blue' }, { type: 'personal' }],
    ['env test: a test key', { env: 'test' }, { env: 'test' }],
    ['env live, or empty: a live key', { env: '' }, { env: 'live' }]
  ]
  for (const [what, over, expected] of cases) {
    const parsed = parseKeyRecord(fields(PERSONAL, over))
    t.not(parsed, INVALID, what)
    t.match(parsed, expected, what)
  }
  t.match(parseKeyRecord(fields(BOT, { user: 'mallory' })), { user: undefined, role: 'reader' }, 'a BOT key ignores a stray user')
})

t.test('parseKeyRecord: every field rule makes a record INVALID', async (t) => {
  const rows: Array<[string, Record<string, string | undefined>, Record<string, string | undefined>?]> = [
    ['unknown type', { type: 'service' }],
    ['an unknown environment: refused, never taken for live', { env: 'staging' }],
    ['type in another case', { type: 'Personal' }],
    ['empty type', { type: '' }],
    ['missing type', { type: undefined }],
    ['unknown status (suspended)', { status: 'suspended' }],
    ['status in another case', { status: 'ACTIVE' }],
    ['missing status', { status: undefined }],
    ['missing hash', { hash: undefined }],
    ['empty hash', { hash: '' }],
    ['hash too short', { hash: HASH.slice(2) }],
    ['hash too long', { hash: HASH + 'ab' }],
    ['hash in upper case', { hash: HASH.toUpperCase() }],
    ['hash not hex', { hash: 'zz'.repeat(32) }],
    ['missing org', { org: undefined }],
    ['empty org', { org: '' }],
    ['garbage expires_at', { expires_at: 'tomorrow' }],
    ['impossible expires_at', { expires_at: '2027-13-45T99:00:00Z' }],
    ['expires_at without a zone', { expires_at: '2027-01-31T00:00:00' }],
    ['expires_at as a date only', { expires_at: '2027-01-31' }],
    ['expires_at as epoch ms', { expires_at: '1800000000000' }],
    ['personal key with no user', { user: undefined }],
    ['personal key with an empty user', { user: '' }],
    ['BOT key with no role', { role: undefined }, BOT],
    ['BOT key with an empty role', { role: '' }, BOT],
    ['BOT key, unknown status', { status: 'suspended' }, BOT]
  ]
  for (const [what, over, base] of rows) t.equal(parseKeyRecord(fields(base ?? PERSONAL, over)), INVALID, what)
  t.equal(parseKeyRecord({}), INVALID, 'an empty hash (HGETALL of a missing key)')
})

t.test('parseUserRecord', async (t) => {
  const user = { org: 'acme', role: 'reader', status: 'active', name: 'Alice' }
  t.same(parseUserRecord(fields(user)), { org: 'acme', role: 'reader', status: 'active' })
  t.same(parseUserRecord(fields(user, { status: 'deactivated' })), { org: 'acme', role: 'reader', status: 'deactivated' })
  const rows: Array<[string, Record<string, string | undefined>]> = [
    ['unknown status', { status: 'suspended' }],
    ['status in another case', { status: 'Active' }],
    ['no status', { status: undefined }],
    ['no org', { org: undefined }],
    ['empty org', { org: '' }],
    ['no role', { role: undefined }],
    ['empty role', { role: '' }]
  ]
  for (const [what, over] of rows) t.equal(parseUserRecord(fields(user, over)), INVALID, what)
})

t.test('parseRoleRecord: permissions split on any whitespace', async (t) => {
  const rows: Array<[Record<string, string>, string[]]> = [
    [{ permissions: 'users:read orgs:read' }, ['users:read', 'orgs:read']],
    [{ permissions: '  users:read\t\norgs:read  ' }, ['users:read', 'orgs:read']],
    [{ permissions: '' }, []],
    [{}, []]
  ]
  for (const [f, expected] of rows) {
    const role = parseRoleRecord(f)
    t.same(role.permissions, expected, JSON.stringify(f))
    t.equal(role.grants.hasAll(expected), true, 'grants what it lists')
  }
  t.equal(parseRoleRecord({}).grants.has('users:read'), false, 'no permissions field grants nothing')
})

t.test('Grants: exact, `resource:*`, `*`; `keygate:` only by name', async (t) => {
  const rows: Array<[string[], string, boolean]> = [
    [['users:read'], 'users:read', true],
    [['users:read'], 'users:write', false],
    [['users:read'], 'users:read:all', false],
    [['users:read'], 'Users:read', false],
    [['users:*'], 'users:read', true],
    [['users:*'], 'users:write', true],
    [['users:*'], 'orgs:read', false],
    [['users:*'], 'usersx:read', false],
    [['users:*'], 'users', false],
    [['*'], 'users:read', true],
    [['*'], 'anything', true],
    [['*'], 'keygate:admin', false],
    [['*'], 'keygate:org:admin', false],
    [['*'], 'keygate:keys:self', false],
    [['keygate:*'], 'keygate:admin', false],
    [['keygate:*'], 'keygate:org:admin', false],
    [['keygate:org:*'], 'keygate:org:admin', false],
    [['keygate:admin'], 'keygate:admin', true],
    [['keygate:admin'], 'keygate:org:admin', false],
    [['keygate:admin'], 'users:read', false],
    [['*', 'keygate:org:admin'], 'keygate:org:admin', true],
    [['*', 'keygate:org:admin'], 'keygate:admin', false],
    [['users*'], 'users:read', false],
    [['users*'], 'users*', false],
    [[], 'users:read', false]
  ]
  for (const [permissions, asked, granted] of rows) {
    t.equal(new Grants(permissions).has(asked), granted, `${JSON.stringify(permissions)} ${granted ? 'grants' : 'does not grant'} ${asked}`)
  }
  const g = new Grants(['users:read', 'orgs:*'])
  t.equal(g.hasAll([]), true, 'nothing asked: granted')
  t.equal(g.hasAll(['users:read', 'orgs:list']), true, 'every one granted')
  t.equal(g.hasAll(['users:read', 'users:write']), false, 'one missing denies')
  t.equal(new Grants(['*']).all, true)
  t.equal(NO_GRANTS.has('users:read'), false)
  t.equal(NO_GRANTS.hasAll([]), true)
})

t.test('fieldsOf, timestamps and flat copies', async (t) => {
  t.same(fieldsOf(['a', '1', 'b', '2']), { a: '1', b: '2' })
  t.same(fieldsOf(['a', '1', 'dangling']), { a: '1' }, 'an odd element is dropped')
  t.same(fieldsOf([]), {})
  t.equal(isoTimestamp(Date.UTC(2027, 0, 31, 12, 30, 5, 999)), '2027-01-31T12:30:05Z', 'whole seconds, UTC')
  t.equal(parseTimestamp(isoTimestamp(Date.UTC(2027, 0, 31))), Date.UTC(2027, 0, 31), 'round trip')
  for (const text of ['2027-01-31T00:00Z', '2027-01-31T00:00:00-0130', '2027-01-31T00:00:00.123456789Z']) {
    t.type(parseTimestamp(text), 'number', text)
  }
  for (const text of ['', ' 2027-01-31T00:00:00Z', '2027-01-31 00:00:00Z', '2027-02-30T25:00:00Z', 'now']) {
    t.equal(parseTimestamp(text), undefined, JSON.stringify(text))
  }
  const long = 'x'.repeat(40)
  t.equal(flatCopy(long), long)
  t.equal(flatCopy('short'), 'short')
  t.equal(flatCopy('\ud800'.repeat(13)), '\ud800'.repeat(13), 'a lone surrogate: the same string')
})

t.test('a key\'s scope narrows its role: granted only when both grant, by the same rules', async (t) => {
  const lists = [[], ['*'], ['users:*'], ['users:read'], ['users:read', 'orders:write'], ['keygate:admin'], ['keygate:*'], ['*', 'keygate:org:admin'], ['billing.v2:*'], ['billing.v2:invoices:*'], ['users:read', 'users:*']]
  const asked = ['users:read', 'users:write', 'orders:write', 'orders:read', 'keygate:admin', 'keygate:org:admin', 'billing.v2:invoices:read', 'billing.v2:x', 'other:thing']
  for (const role of lists) {
    for (const scope of lists) {
      const r = new Grants(role)
      const s = new Grants(scope)
      const both = scopedGrants(r, s)
      for (const p of asked) t.equal(both.has(p), r.has(p) && s.has(p), `role ${role.join(' ')} / scope ${scope.join(' ')}: ${p}`)
    }
  }
  const role = new Grants(['users:*', 'keygate:org:admin'])
  t.equal(scopedGrants(role, undefined), role, 'no scope: the role\'s own grants, nothing built')
  const scope = new Grants(['users:read'])
  t.equal(scopedGrants(role, scope), scopedGrants(role, scope), 'worked out once per (scope, role)')
  t.same(scopedGrants(role, scope).permissions, ['users:read'], 'the effective permissions, listed')
  t.equal(scopedGrants(role, new Grants(['*'])).has('keygate:org:admin'), false, 'a wildcard scope never keeps a keygate: permission')
  t.equal(scopedGrants(role, new Grants(['keygate:org:admin'])).has('keygate:org:admin'), true, 'named in both: kept')
})

t.test('scope and allowed_cidrs parse once into a shared restriction; anything malformed makes the record INVALID', async (t) => {
  const base = { type: 'personal', hash: 'ab'.repeat(32), org: 'acme', user: 'alice', status: 'active' }
  const plain = parseKeyRecord(base)
  t.equal(plain !== INVALID && plain.restriction, undefined, 'neither field: no restriction')
  t.equal((parseKeyRecord({ ...base, scope: '', allowed_cidrs: '' }) as KeyRecord).restriction, undefined, 'empty fields are none')
  const a = parseKeyRecord({ ...base, scope: 'users:read', allowed_cidrs: '10.0.0.0/8 2001:db8::/32' }) as KeyRecord
  const b = parseKeyRecord({ ...base, scope: 'users:read', allowed_cidrs: '10.0.0.0/8 2001:db8::/32' }) as KeyRecord
  t.equal(a.restriction, b.restriction, 'the same fields: one restriction')
  t.same(a.restriction?.scope?.permissions, ['users:read'])
  t.equal(parseKeyRecord({ ...base, scope: 'USERS:READ' }), INVALID, 'a permission outside the grammar')
  t.equal(parseKeyRecord({ ...base, allowed_cidrs: '10.0.0.0/33' }), INVALID, 'a prefix too long')
  t.equal(parseKeyRecord({ ...base, allowed_cidrs: 'example.com' }), INVALID, 'a name')
  t.equal(parseKeyRecord({ ...base, allowed_cidrs: 'fe80::1%eth0/64' }), INVALID, 'a zone id')
  const onlyCidrs = parseKeyRecord({ ...base, allowed_cidrs: '127.0.0.1' }) as KeyRecord
  t.equal(onlyCidrs.restriction?.scope, undefined, 'addresses alone: the role\'s grants whole')
  const list = a.restriction?.addresses as AddressList
  t.equal(list.allows('10.1.2.3'), true)
  t.equal(list.allows('::ffff:10.1.2.3'), true, 'IPv4-mapped IPv6 is its IPv4 address')
  t.equal(list.allows('11.0.0.1'), false)
  t.equal(list.allows('2001:db8:1::5'), true)
  t.equal(list.allows('2001:db9::5'), false)
  t.equal(list.allows(undefined), false, 'no address: refused')
  t.equal(list.allows('junk'), false)
  t.equal((onlyCidrs.restriction?.addresses as AddressList).allows('127.0.0.1'), true, 'a bare address is one host')
  t.equal((onlyCidrs.restriction?.addresses as AddressList).allows('127.0.0.2'), false)
  t.same(cidrProblems(['10.0.0.0/8', '::1/128', '1.2.3.4/x', '::1/129']).length, 2)
})
