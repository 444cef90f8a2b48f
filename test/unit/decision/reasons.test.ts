// Every reason in REASONS, as a table. The decision's own reasons are decided here
// by the one decision function (decideTarget, built as every front end builds it:
// src/decision/factory.ts) over an in-memory registry; the reasons only a front end
// gives (framing, body, proxy, CORS, the authorizer's peer, WebSocket caps) name the
// test that proves each. A reason with no row fails the completeness check.
import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { NO_TRACKING } from '../../../src/cache/tracking.js'
import { ReadThroughCache } from '../../../src/cache/read-through.js'
import { RecordCache } from '../../../src/cache/record-cache.js'
import { IdentityResolver } from '../../../src/cache/resolve-identity.js'
import { cacheTimings } from '../../../src/cache/timings.js'
import { UnknownKeyLimit } from '../../../src/cache/unknown-key-limit.js'
import type { FillLimiter } from '../../../src/cache/fill-limiter.js'
import { decisionFactory } from '../../../src/decision/factory.js'
import type { TargetVerdict } from '../../../src/decision/decide-request.js'
import { ERRORS, REASONS, type ErrorCode, type Reason } from '../../../src/errors.js'
import { PROXIED_METHODS } from '../../../src/http/methods.js'
import type { Check, Limiter } from '../../../src/ratelimit/limiter.js'
import type { RedisHealth } from '../../../src/registry/redis-client.js'
import { generateKey } from '../../../src/registry/key-format.js'
import { INVALID, NO_ORG_RECORD, parseKeyRecord, parseRoleRecord, parseUserRecord, type KeyRecord } from '../../../src/registry/records.js'
import type { Chain } from '../../../src/registry/registry-reader.js'
import { MemoryRegistry } from '../../helpers/memory-registry.js'
import { parseConfig } from '../../../src/config/load.js'

const config = parseConfig(`
upstreams: { core: { url: "http://127.0.0.1:3000" } }
routes:
  - { prefix: /api/v1, upstream: core }
  - { prefix: /kong, upstream: core, key_header: apikey }
rules:
  - { method: GET, path: /api/v1/users, permissions: [users:read] }
  - { method: GET, path: /api/v1/orgs/:org/projects, permissions: [], org_param: org }
  - { method: GET, path: /api/v1/health, public: true }
  - { method: GET, path: /kong/users, permissions: [users:read] }
`)
const NOW = Date.UTC(2026, 5, 1)
const key = generateKey('kg_')
const other = generateKey('kg_')

function keyRecord (over: Record<string, string | undefined> = {}): KeyRecord {
  const fields: Record<string, string> = {}
  for (const [name, value] of Object.entries({ type: 'personal', hash: key.hash, org: 'acme', user: 'alice', status: 'active', ...over })) {
    if (value !== undefined) fields[name] = value
  }
  const record = parseKeyRecord(fields)
  if (record === INVALID) throw new Error('fixture key record is invalid')
  return record
}
const alice = parseUserRecord({ org: 'acme', role: 'reader', status: 'active' })
const reader = parseRoleRecord({ permissions: 'users:read' })
const chain = (over: Partial<Chain> = {}): Chain => ({ key: keyRecord(), user: alice, roleName: 'reader', role: reader, org: NO_ORG_RECORD, ...over })

interface World {
  /** the chain Redis holds for the key (none: unknown) */
  chain?: Chain
  /** every registry read fails with this */
  failure?: unknown
  /** the fill budget is spent */
  busy?: boolean
  /** the peer's budget of unknown-key lookups is spent */
  peerSpent?: boolean
  /** what the rate limiter answers */
  limit?: Check
}

interface Row {
  what: string
  world?: World
  target?: string
  /** the Authorization header; default: `Bearer <the key>` */
  authorization?: string | null
  /** more request headers, as raw name/value pairs */
  extra?: string[]
  reason: Reason
  code?: ErrorCode
}

const wrongType = Object.assign(new Error('WRONGTYPE Operation against a key holding the wrong kind of value'), { name: 'ReplyError' })
const decided: Row[] = [
  { what: 'a good key, a rule it satisfies', world: { chain: chain() }, reason: 'allowed' },
  { what: 'no Authorization header', authorization: null, reason: 'missing_credential', code: 'unauthorized' },
  { what: 'another scheme', authorization: 'Basic YWxpY2U6c2VjcmV0', reason: 'missing_credential', code: 'unauthorized' },
  { what: 'a Bearer token that is not a key', authorization: 'Bearer not-a-key', reason: 'malformed_credential', code: 'unauthorized' },
  { what: 'a key whose checksum is wrong', authorization: `Bearer ${key.key.slice(0, -1)}${key.key.endsWith('A') ? 'B' : 'A'}`, reason: 'bad_checksum', code: 'unauthorized' },
  { what: 'a key the registry does not hold', reason: 'unknown_key', code: 'unauthorized' },
  { what: 'an unknown key from a peer out of lookups', world: { peerSpent: true }, reason: 'unknown_key_limited', code: 'unauthorized' },
  { what: 'the record of another secret', world: { chain: chain({ key: keyRecord({ hash: other.hash }) }) }, reason: 'secret_mismatch', code: 'unauthorized' },
  { what: 'a revoked key', world: { chain: chain({ key: keyRecord({ status: 'revoked' }) }) }, reason: 'key_revoked', code: 'unauthorized' },
  { what: 'an expired key', world: { chain: chain({ key: keyRecord({ expires_at: '2020-01-31T00:00:00Z' }) }) }, reason: 'key_expired', code: 'unauthorized' },
  { what: 'a personal key without its user', world: { chain: chain({ user: null }) }, reason: 'user_missing', code: 'unauthorized' },
  { what: 'a deactivated user', world: { chain: chain({ user: parseUserRecord({ org: 'acme', role: 'reader', status: 'deactivated' }) }) }, reason: 'user_deactivated', code: 'unauthorized' },
  { what: 'a user of another org than the key', world: { chain: chain({ user: parseUserRecord({ org: 'umbrella', role: 'reader', status: 'active' }) }) }, reason: 'org_mismatch', code: 'unauthorized' },
  {
    what: 'a BOT key naming an identity whose record does not exist',
    world: { chain: chain({ key: keyRecord({ type: 'bot', user: undefined, role: 'reader', identity: 'cust-1' }), user: undefined, identity: null }) },
    reason: 'identity_missing',
    code: 'unauthorized'
  },
  { what: 'a rule for another org', world: { chain: chain() }, target: '/api/v1/orgs/umbrella/projects', reason: 'org_mismatch', code: 'forbidden' },
  { what: 'a key record that does not parse', world: { chain: chain({ key: INVALID }) }, reason: 'invalid_record', code: 'unauthorized' },
  { what: 'a registry record of the wrong Redis type', world: { failure: wrongType }, reason: 'invalid_record', code: 'unauthorized' },
  { what: 'no rule for the path', world: { chain: chain() }, target: '/api/v1/nothing', reason: 'no_rule', code: 'forbidden' },
  { what: 'a role without the permission', world: { chain: chain({ role: parseRoleRecord({ permissions: 'orgs:read' }) }) }, reason: 'missing_permission', code: 'forbidden' },
  { what: 'a scope without the permission its role grants', world: { chain: chain({ key: keyRecord({ scope: 'orgs:read' }) }) }, reason: 'missing_permission', code: 'forbidden' },
  { what: 'a scope naming the permission its role lacks', world: { chain: chain({ key: keyRecord({ scope: 'users:read orgs:read' }), role: parseRoleRecord({ permissions: 'orgs:read' }) }) }, reason: 'missing_permission', code: 'forbidden' },
  { what: 'a scope of `*` over a role that grants it', world: { chain: chain({ key: keyRecord({ scope: '*' }) }) }, reason: 'allowed' },
  { what: 'a key bound to the client\'s network', world: { chain: chain({ key: keyRecord({ allowed_cidrs: '10.0.0.0/8 192.0.2.0/24' }) }) }, reason: 'allowed' },
  {
    what: 'a key bound to other addresses, over its rate limit too: refused before the limits',
    world: { chain: chain({ key: keyRecord({ allowed_cidrs: '198.51.100.0/24 2001:db8::/32' }) }), limit: { allowed: false, reason: 'rate_limited', limit: 1, remaining: 0, resetS: 1, retryAfterS: 1 } },
    reason: 'address_not_allowed',
    code: 'forbidden'
  },
  { what: 'a key bound to other addresses, on a path without a rule', world: { chain: chain({ key: keyRecord({ allowed_cidrs: '198.51.100.7' }) }) }, target: '/api/v1/nothing', reason: 'address_not_allowed', code: 'forbidden' },
  { what: 'Redis unreachable, nothing cached', world: { failure: new Error('connect ECONNREFUSED') }, reason: 'registry_unavailable', code: 'service_unavailable' },
  { what: 'the fill budget spent', world: { busy: true }, reason: 'registry_busy', code: 'service_unavailable' },
  { what: 'a dot segment', target: '/api/v1/../admin', reason: 'bad_path', code: 'bad_request' },
  { what: 'a path under no route prefix', target: '/other', reason: 'no_route', code: 'not_found' },
  {
    what: 'over the key\'s rate limit',
    world: { chain: chain(), limit: { allowed: false, reason: 'rate_limited', limit: 1, remaining: 0, resetS: 1, retryAfterS: 1 } },
    reason: 'rate_limited',
    code: 'rate_limited'
  },
  { what: 'a public rule, no credential', target: '/api/v1/health', authorization: null, reason: 'public' },
  { what: 'a public rule with a bad key: decided as any request', target: '/api/v1/health', authorization: 'Bearer not-a-key', reason: 'malformed_credential', code: 'unauthorized' },
  { what: 'the key in the route\'s key header', world: { chain: chain() }, target: '/kong/users', authorization: null, extra: ['ApiKey', key.key], reason: 'allowed' },
  { what: 'the key in both Authorization and the key header', world: { chain: chain() }, target: '/kong/users', extra: ['apikey', key.key], reason: 'two_credentials', code: 'unauthorized' },
  { what: 'rate limits unavailable (on_error: deny)', world: { chain: chain(), limit: { allowed: false, reason: 'rate_limit_unavailable' } }, reason: 'rate_limit_unavailable', code: 'service_unavailable' }
]

/** Reasons a front end gives, not the decision: the file that gives each, and a test of that front end. */
const elsewhere: Partial<Record<Reason, [gives: string, test: string]>> = {
  upstream_error: ['src/data-plane/proxy.ts', 'test/integration/data-plane/upstream-failures.test.ts'],
  upstream_timeout: ['src/data-plane/proxy.ts', 'test/integration/data-plane/upstream-failures.test.ts'],
  bad_request: ['src/http/listener.ts', 'test/integration/data-plane/error-bodies.test.ts'],
  body_too_large: ['src/data-plane/body-limit.ts', 'test/unit/data-plane/body-limit.test.ts'],
  header_too_large: ['src/http/framing.ts', 'test/integration/data-plane/limits.test.ts'],
  expectation_failed: ['src/http/framing.ts', 'test/regressions/expect-continue-before-auth.test.ts'],
  request_timeout: ['src/http/framing.ts', 'test/regressions/slow-request-timeouts.test.ts'],
  internal_error: ['src/http/listener.ts', 'test/integration/data-plane/error-bodies.test.ts'],
  cors_preflight: ['src/data-plane/cors.ts', 'test/integration/data-plane/cors.test.ts'],
  cors_refused: ['src/data-plane/cors.ts', 'test/integration/data-plane/cors.test.ts'],
  quota_exceeded: ['src/quota/meter.ts', 'test/integration/quota/quota-exact-across-instances.test.ts'],
  quota_unavailable: ['src/quota/meter.ts', 'test/integration/quota/quota-redis-down.test.ts'],
  untrusted_peer: ['src/authorizer/authorizer-plane.ts', 'test/integration/authorizer/authorizer.test.ts'],
  bad_upgrade: ['src/websocket/upgrade.ts', 'test/integration/websocket/websocket.test.ts'],
  websocket_limit: ['src/websocket/upgrade.ts', 'test/integration/websocket/websocket-limits.test.ts'],
  websocket_key_limit: ['src/websocket/upgrade.ts', 'test/integration/websocket/websocket-limits.test.ts'],
  unknown_session: ['src/admin/api/sign-in.ts', 'test/integration/admin/sso.test.ts'],
  csrf_header_missing: ['src/admin/api/index.ts', 'test/integration/admin/sso.test.ts'],
  two_session_cookies: ['src/admin/api/index.ts', 'test/regressions/session-cookie-planted.test.ts'],
  leak_report: ['src/data-plane/leak-reports.ts', 'test/integration/leaks/public-leak-reports.test.ts'],
  leak_report_limited: ['src/data-plane/leak-reports.ts', 'test/integration/leaks/public-leak-reports.test.ts'],
  test_key_not_allowed: ['src/decision/stages/environment.ts', 'test/integration/data-plane/test-keys.test.ts']
}

async function decide (row: Row): Promise<TargetVerdict> {
  const w = row.world ?? {}
  const registry = new MemoryRegistry()
  if (w.chain !== undefined) registry.chains.set(key.id, w.chain)
  registry.failure = w.failure
  const health = { up: true, lastOkAt: NOW, markUp () {}, markDown () { health.up = false } } as unknown as RedisHealth
  const fills = w.busy === true ? { take: async () => { throw new Error('the fill budget is spent') } } as unknown as FillLimiter : undefined
  const unknownKeys = new UnknownKeyLimit({ perSecond: 0.001, burst: 1, maxPeers: 10 })
  if (w.peerSpent === true) unknownKeys.take('192.0.2.7', NOW)
  const cache = new ReadThroughCache({ records: new RecordCache(100), enabled: true, tracking: NO_TRACKING, fills, health, timings: cacheTimings(config.cache), now: () => NOW })
  const resolver = new IdentityResolver({ cache, reader: registry.reader, health, unknownKeys, now: () => NOW })
  const limiter: Limiter | undefined = w.limit === undefined ? undefined : { check: () => w.limit }
  const decider = decisionFactory(config, resolver, PROXIED_METHODS).decider({ limiter })
  const headers = [...row.authorization === null ? [] : ['Authorization', row.authorization ?? `Bearer ${key.key}`], ...row.extra ?? []]
  return await decider.decideTarget('GET', row.target ?? '/api/v1/users', headers, '192.0.2.7', NOW)
}

t.test('the decision: each reason it gives, from the request and the registry', async (t) => {
  for (const row of decided) {
    const v = await decide(row)
    t.equal(v.ok ? (v.identity === undefined ? 'public' : 'allowed') : v.reason, row.reason, row.what)
    if (!v.ok) t.equal(v.code, row.code, `${row.what}: ${row.code ?? ''} (${ERRORS[v.code].status})`)
  }
})

t.test('every reason has a row: decided here, or given by a front end and tested there', async (t) => {
  const covered = new Set<Reason>(decided.map((r) => r.reason))
  const root = new URL('../../../', import.meta.url)
  for (const reason of REASONS) {
    const row = elsewhere[reason]
    if (covered.has(reason)) {
      t.equal(row, undefined, `${reason}: one row, here`)
      continue
    }
    t.ok(row !== undefined, `${reason} has a row`)
    if (row === undefined) continue
    const [gives, test] = row
    t.ok(readFileSync(new URL(gives, root), 'utf8').includes(`'${reason}'`), `${reason}: given in ${gives}`)
    t.ok(existsSync(new URL(test, root)), `${reason}: tested in ${test}`)
  }
})
