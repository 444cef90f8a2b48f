// Stages 4-7 as pure decisions: every reason `authenticate` and `authorize` can give,
// and the identity an accepted key carries. The records are parsed from the hashes an
// operator writes, so a row reads as the registry would hold it.
import t from 'tap'
import { authenticate } from '../../../src/decision/decide.js'
import { authorize } from '../../../src/decision/stages/authorize.js'
import type { Identity } from '../../../src/decision/identity.js'
import { compileRules as compile } from '../../../src/decision/match-rule.js'
import { PROXIED_METHODS } from '../../../src/http/methods.js'
import type { Resolved } from '../../../src/cache/resolve-identity.js'
import { generateKey, hashSecret, parseKey, type ParsedKey } from '../../../src/registry/key-format.js'
import {
  Grants, INVALID, NO_GRANTS, parseKeyRecord, parseRoleRecord, parseUserRecord, type KeyRecord, type RoleRecord, type UserRecord
} from '../../../src/registry/records.js'

const compileRules = (rules: Parameters<typeof compile>[0]): ReturnType<typeof compile> => compile(rules, PROXIED_METHODS)

const generated = generateKey('kg_')
const parsed = parseKey(generated.key, 'kg_')
if (typeof parsed === 'string') throw new Error(parsed)
const credential: ParsedKey = parsed

const NOW = Date.UTC(2026, 5, 1)
const HOUR = 3_600_000

function keyRecord (over: Record<string, string | undefined> = {}): KeyRecord {
  const fields: Record<string, string> = {}
  const all = { type: 'personal', hash: generated.hash, org: 'acme', user: 'alice', status: 'active', ...over }
  for (const [name, value] of Object.entries(all)) if (value !== undefined) fields[name] = value
  const record = parseKeyRecord(fields)
  if (record === INVALID) throw new Error(`fixture key record is invalid: ${JSON.stringify(over)}`)
  return record
}
function userRecord (over: Partial<Record<'org' | 'role' | 'status', string>> = {}): UserRecord {
  const record = parseUserRecord({ org: 'acme', role: 'reader', status: 'active', ...over })
  if (record === INVALID) throw new Error('fixture user record is invalid')
  return record
}
const role = (permissions: string): RoleRecord => parseRoleRecord({ permissions })
const bot = (over: Record<string, string | undefined> = {}): KeyRecord => keyRecord({ type: 'bot', user: undefined, role: 'deployer', ...over })
const iso = (ms: number): string => new Date(ms).toISOString()

interface Row {
  what: string
  resolved: Resolved
  now?: number
  /** the denial's reason; absent: accepted */
  reason?: string
}

const rows: Row[] = [
  { what: 'unknown key', resolved: { key: null }, reason: 'unknown_key' },
  { what: 'unknown key, peer out of lookups', resolved: { key: null, limited: true }, reason: 'unknown_key_limited' },
  { what: 'invalid key record', resolved: { key: INVALID }, reason: 'invalid_record' },
  { what: 'stored hash of another secret', resolved: { key: keyRecord({ hash: generateKey('kg_').hash }), user: userRecord() }, reason: 'secret_mismatch' },
  { what: 'stored hash of the secret with one character changed', resolved: { key: keyRecord({ hash: hashSecret(credential.secret.slice(1) + 'x') }), user: userRecord() }, reason: 'secret_mismatch' },
  { what: 'revoked key', resolved: { key: keyRecord({ status: 'revoked' }), user: userRecord() }, reason: 'key_revoked' },
  { what: 'revoked BOT key', resolved: { key: bot({ status: 'revoked' }) }, reason: 'key_revoked' },
  { what: 'revoked and expired: revoked is named first', resolved: { key: keyRecord({ status: 'revoked', expires_at: '2020-01-31T00:00:00Z' }), user: userRecord() }, reason: 'key_revoked' },
  { what: 'expired long ago', resolved: { key: keyRecord({ expires_at: '2020-01-31T00:00:00Z' }), user: userRecord() }, reason: 'key_expired' },
  { what: 'expires exactly now', resolved: { key: keyRecord({ expires_at: iso(NOW) }), user: userRecord() }, reason: 'key_expired' },
  { what: 'expired 1 ms ago', resolved: { key: keyRecord({ expires_at: iso(NOW - 1) }), user: userRecord() }, reason: 'key_expired' },
  { what: 'expired BOT key', resolved: { key: bot({ expires_at: iso(NOW - HOUR) }) }, reason: 'key_expired' },
  { what: 'secret mismatch is named before expiry', resolved: { key: keyRecord({ hash: generateKey('kg_').hash, expires_at: iso(NOW - HOUR) }), user: userRecord() }, reason: 'secret_mismatch' },
  { what: 'expires 1 ms from now', resolved: { key: keyRecord({ expires_at: iso(NOW + 1) }), user: userRecord(), role: role('users:read') } },
  { what: 'far-future expiry', resolved: { key: keyRecord({ expires_at: '2999-01-31T00:00:00Z' }), user: userRecord(), role: role('users:read') } },
  { what: 'personal key, user record missing', resolved: { key: keyRecord(), user: null }, reason: 'user_missing' },
  { what: 'personal key, user not looked up', resolved: { key: keyRecord() }, reason: 'user_missing' },
  { what: 'personal key, invalid user record', resolved: { key: keyRecord(), user: INVALID }, reason: 'invalid_record' },
  { what: 'personal key, deactivated user', resolved: { key: keyRecord(), user: userRecord({ status: 'deactivated' }) }, reason: 'user_deactivated' },
  { what: "personal key, the user's org differs from the key's", resolved: { key: keyRecord(), user: userRecord({ org: 'globex' }) }, reason: 'org_mismatch' },
  { what: 'deactivated user in another org: deactivation is named first', resolved: { key: keyRecord(), user: userRecord({ org: 'globex', status: 'deactivated' }) }, reason: 'user_deactivated' },
  { what: 'personal key, active user in its org', resolved: { key: keyRecord(), user: userRecord(), role: role('users:read') } },
  { what: 'BOT key: no user needed', resolved: { key: bot(), role: role('deploy:run') } },
  { what: 'BOT key: a deactivated or missing user record is not read', resolved: { key: bot(), user: userRecord({ status: 'deactivated' }), role: role('deploy:run') } }
]

t.test('authenticate: every reason, in order', async (t) => {
  for (const row of rows) {
    const result = authenticate(credential, row.resolved, row.now ?? NOW)
    if (row.reason === undefined) t.equal(result.ok, true, `${row.what}: accepted`)
    else t.same(result, { ok: false, reason: row.reason }, `${row.what}: ${row.reason}`)
  }
})

t.test('authenticate: the identity of an accepted key', async (t) => {
  const personal = authenticate(credential, { key: keyRecord(), user: userRecord({ role: 'writer' }), roleName: 'writer', role: role('users:write') }, NOW)
  if (!personal.ok) throw new Error(personal.reason)
  t.match(personal.identity, { keyId: credential.id, type: 'personal', userId: 'alice', org: 'acme', role: 'writer' }, "personal: the user's role")
  t.equal(personal.identity.grants.has('users:write'), true, "the role record's grants")
  t.equal(personal.identity.grants.has('users:read'), false)

  const withKeyRole = authenticate(credential, { key: keyRecord({ role: 'admin' }), user: userRecord(), role: role('users:read') }, NOW)
  t.equal(withKeyRole.ok && withKeyRole.identity.role, 'reader', 'a personal key never acts with a role written on the key')

  const b = authenticate(credential, { key: bot(), role: role('deploy:run') }, NOW)
  if (!b.ok) throw new Error(b.reason)
  t.match(b.identity, { keyId: credential.id, type: 'bot', userId: undefined, org: 'acme', role: 'deployer' }, "BOT: the key's own role, no user")
  t.equal(b.identity.grants.has('deploy:run'), true)
})

t.test('authenticate: a missing role grants nothing', async (t) => {
  for (const [what, resolved] of [
    ['personal, role record missing', { key: keyRecord(), user: userRecord(), role: null }],
    ['personal, role not looked up', { key: keyRecord(), user: userRecord() }],
    ['BOT, role record missing', { key: bot(), role: null }]
  ] as Array<[string, Resolved]>) {
    const result = authenticate(credential, resolved, NOW)
    if (!result.ok) throw new Error(`${what}: ${result.reason}`)
    t.equal(result.identity.grants, NO_GRANTS, what)
    t.equal(result.identity.grants.has('users:read'), false, `${what}: grants no permission`)
  }
})

t.test('authorize: no_rule, org_mismatch, missing_permission with its scope, allowed', async (t) => {
  const match = compileRules([
    { method: 'GET', path: '/api/v1/users', permissions: ['users:read'] },
    { method: 'POST', path: '/api/v1/users', permissions: ['users:write', 'users:invite'] },
    { method: '*', path: '/api/v1/orgs/:org/*', permissions: ['orgs:read'], org_param: 'org' },
    { method: 'GET', path: '/api/v1/open/*', permissions: [] }
  ])
  const identity = (permissions: string[], org = 'acme'): Identity =>
    ({ keyId: credential.id, type: 'bot', userId: undefined, org, role: 'r', grants: new Grants(permissions) })
  const cases: Array<[string, Identity, string, string, unknown]> = [
    ['no rule for the path', identity(['*']), 'GET', '/api/v1/nothing', { ok: false, reason: 'no_rule' }],
    ['no rule for the method', identity(['*']), 'DELETE', '/api/v1/users', { ok: false, reason: 'no_rule' }],
    ['granted by name', identity(['users:read']), 'GET', '/api/v1/users', { ok: true }],
    ['granted by `resource:*`', identity(['users:*']), 'POST', '/api/v1/users', { ok: true }],
    ['granted by `*`', identity(['*']), 'POST', '/api/v1/users', { ok: true }],
    ['one of two permissions missing', identity(['users:write']), 'POST', '/api/v1/users', { ok: false, reason: 'missing_permission', scope: 'users:write users:invite' }],
    ['no permission', identity([]), 'GET', '/api/v1/users', { ok: false, reason: 'missing_permission', scope: 'users:read' }],
    ['a rule that needs no permission', identity([]), 'GET', '/api/v1/open/x', { ok: true }],
    ["the path's org is the key's", identity(['orgs:read']), 'GET', '/api/v1/orgs/acme/projects', { ok: true }],
    ["the path's org is another's", identity(['orgs:read']), 'GET', '/api/v1/orgs/globex/projects', { ok: false, reason: 'org_mismatch' }],
    ['org is checked before permissions', identity([]), 'GET', '/api/v1/orgs/globex/projects', { ok: false, reason: 'org_mismatch' }],
    ['`*` does not cross orgs', identity(['*']), 'GET', '/api/v1/orgs/globex/projects', { ok: false, reason: 'org_mismatch' }],
    ['org compared exactly', identity(['orgs:read']), 'GET', '/api/v1/orgs/ACME/projects', { ok: false, reason: 'org_mismatch' }],
    ['right org, permission missing', identity(['users:read']), 'GET', '/api/v1/orgs/acme/projects', { ok: false, reason: 'missing_permission', scope: 'orgs:read' }]
  ]
  for (const [what, id, method, path, expected] of cases) t.same(authorize(id, match(method, path)), expected, what)
})
