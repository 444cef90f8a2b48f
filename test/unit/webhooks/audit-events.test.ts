// The webhook events an audit entry means (audit-events.ts): entries made by the audit trail's own
// changeArgs (src/admin/store/audit-log.ts), as every admin change writes them.
import t from 'tap'
import { AuditLog } from '../../../src/admin/store/audit-log.js'
import type { RegistryClient } from '../../../src/registry/redis-client.js'
import { redisKeys } from '../../../src/registry/redis-keys.js'
import { auditEventId, derivedEventId, eventsOfEntry } from '../../../src/webhooks/audit-events.js'

const KEYS = redisKeys('kg:')
const STREAM = KEYS.audit
const ENTRY = '1767225600000-0'
const NOW = Date.parse('2026-01-01T00:00:00Z')
const AT = '2026-01-01T00:00:00.000Z'
/** the entry's time, as the trail writes it (to the second) */
const TIME = '2026-01-01T00:00:00Z'

/** an entry's fields, as `changeArgs` writes them (the XADD arguments after `*`) */
function entry (action: string, target: string, detail: Record<string, string>, org?: string, actor = 'cli:ops'): string[] {
  const log = new AuditLog(undefined as unknown as RegistryClient, KEYS, 'kg_', actor)
  return log.changeArgs(action, target, 'ok', detail, org, NOW).slice(5)
}

const BOT = Object.fromEntries([
  ['type', 'bot'], ['org', 'acme'], ['name', 'ci'], ['status', 'active'], ['created_at', AT], ['created_by', 'user:ada'],
  ['role', 'deployer'], ['expires_at', '2026-03-01T00:00:00.000Z'], ['scope', 'users:read'], ['meta', '12 bytes'],
  ['hash', 'never-sent']
])
const EXPIRES = '2026-03-01T00:00:00.000Z'

t.test('each action: the events it means, their data exactly', async (t) => {
  const rows: Array<[string, string[], Array<{ type: string, data: Record<string, unknown> }>]> = [
    ['key.create, a BOT key', entry('key.create', 'key:k1', BOT, 'acme'), [{
      type: 'key.created',
      data: { key_id: 'k1', env: 'live', key_type: 'bot', role: 'deployer', name: 'ci', expires_at: EXPIRES, actor: 'cli:ops', org: 'acme' }
    }]],
    ['key.create, a personal test key without expiry',
      entry('key.create', 'key:k2', { type: 'personal', org: 'acme', name: '', user: 'ada', env: 'test' }, 'acme'), [{
        type: 'key.created',
        data: { key_id: 'k2', env: 'test', key_type: 'personal', user: 'ada', name: '', actor: 'cli:ops', org: 'acme' }
      }]],
    ['key.import', entry('key.import', 'key:k3', { type: 'bot', org: 'acme', role: 'r', name: 'old', imported: 'sha256' }, 'acme'),
      [{ type: 'key.created', data: { key_id: 'k3', env: 'live', key_type: 'bot', role: 'r', name: 'old', actor: 'cli:ops', org: 'acme' } }]],
    ['key.rotate', entry('key.rotate', 'key:k1', { new_key: 'k4', replaces_expires_at: AT, env: 'test' }, 'acme'), [{
      type: 'key.rotated', data: { key_id: 'k1', new_key_id: 'k4', env: 'test', replaces_expires_at: AT, actor: 'cli:ops', org: 'acme' }
    }]],
    ['key.revoke', entry('key.revoke', 'key:k1', { from: 'active' }, 'acme', 'key:k9'),
      [{ type: 'key.revoked', data: { key_id: 'k1', reason: 'revoked', actor: 'key:k9', org: 'acme' } }]],
    ['key.revoke with an identity\'s deletion', entry('key.revoke', 'key:k5', { from: 'active', identity: 'i1' }, 'acme'),
      [{ type: 'key.revoked', data: { key_id: 'k5', reason: 'revoked', actor: 'cli:ops', org: 'acme' } }]],
    ['key.leaked', entry('key.leaked', 'key:k1', { from: 'active', leak_source: 'github:o/r', env: 'live' }, 'acme', 'scanner:github'),
      [{ type: 'key.leaked', data: { key_id: 'k1', env: 'live', leak_source: 'github:o/r', actor: 'scanner:github', org: 'acme' } }]],
    ['user.deactivate with two BOT keys revoked',
      entry('user.deactivate', 'user:ada', { from: 'active', to: 'deactivated', revoked_keys: 'k6 k7' }, 'acme'), [
        { type: 'user.deactivated', data: { user_id: 'ada', revoked_keys: ['k6', 'k7'], actor: 'cli:ops', org: 'acme' } },
        { type: 'key.revoked', data: { key_id: 'k6', reason: 'creator_deactivated', actor: 'cli:ops', org: 'acme' } },
        { type: 'key.revoked', data: { key_id: 'k7', reason: 'creator_deactivated', actor: 'cli:ops', org: 'acme' } }
      ]],
    ['user.deactivate, none revoked', entry('user.deactivate', 'user:ada', { from: 'active', to: 'deactivated' }, 'acme'),
      [{ type: 'user.deactivated', data: { user_id: 'ada', revoked_keys: [], actor: 'cli:ops', org: 'acme' } }]],
    ['user.deactivate of a deactivated user: no user.deactivated',
      entry('user.deactivate', 'user:ada', { from: 'deactivated', to: 'deactivated' }, 'acme'), []],
    ['user.activate', entry('user.activate', 'user:ada', { from: 'deactivated', to: 'active' }, 'acme'), []],
    ['registry.apply, no org', entry('registry.apply', 'registry', { created: 'role:a user:b', changed: '', deleted: 'org:c', prune: 'true' }),
      [{ type: 'registry.applied', data: { created: ['role:a', 'user:b'], changed: [], deleted: ['org:c'], actor: 'cli:ops' } }]],
    ['registry.apply for an org', entry('registry.apply', 'registry', { created: '', changed: 'user:b', deleted: '', org: 'acme' }, 'acme'),
      [{ type: 'registry.applied', data: { created: [], changed: ['user:b'], deleted: [], actor: 'cli:ops', org: 'acme' } }]],
    ['key.restrict: no event', entry('key.restrict', 'key:k1', { scope: 'users:read' }, 'acme'), []],
    ['webhook.add: no event', entry('webhook.add', 'webhook:wh_1', { url: 'https://x', events: 'key.created' }), []],
    ['a refusal\'s shape (result not ok): no event', [...entry('key.revoke', 'key:k1', {}, 'acme')].map((f) => f === 'ok' ? 'denied: no' : f), []]
  ]
  for (const [what, fields, want] of rows) {
    const got = eventsOfEntry(STREAM, ENTRY, fields)
    t.same(got.map((e) => ({ type: e.type, data: e.data })), want, what)
    t.ok(got.every((e) => e.timestamp === TIME && e.org === (want[0]?.data.org as string | undefined)), `${what}: time and org`)
    t.same(got.map((e) => e.id), want.map((_, n) => auditEventId(STREAM, ENTRY, n)), `${what}: ids from the entry's`)
    t.notOk(JSON.stringify(got).includes('never-sent'), `${what}: no hash`)
  }
})

t.test('event ids: the delivery ids\' shape, stable, distinct per entry, event and stream', async (t) => {
  const ids = [
    auditEventId(STREAM, ENTRY), auditEventId(STREAM, ENTRY, 1), auditEventId(STREAM, '1767225600000-1'),
    auditEventId('other:audit', ENTRY), derivedEventId('key.expiring', KEYS.key('k1'), '1767225600000')
  ]
  for (const id of ids) t.match(id, /^msg_[A-Za-z0-9_-]{22}$/)
  t.equal(new Set(ids).size, ids.length, 'distinct')
  t.equal(auditEventId(STREAM, ENTRY, 1), ids[1], 'the same entry, the same id')
})
