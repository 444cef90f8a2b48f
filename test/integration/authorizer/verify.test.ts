/**
 * `POST /v1/verify` on the authorizer listener (docs/verify.md): a caller key granted
 * `keygate:keys:verify` asks about another key. Every request goes over a raw socket to
 * a real gateway on a real Redis: valid, unknown, revoked (invalid within 1 s on two
 * instances sharing the registry), forbidden by `permissions`, a caller without the
 * permission, a path attack in `permissions`, `cost` spent only when given (a metered
 * key's quota read without one), a key of an identity with its identity and merged
 * `meta`; the key asked about never reaches a log line.
 */
import t from 'tap'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import { send, type RawResponse } from '../../helpers/raw-http.js'
import { startRedis, uniquePrefix } from '../../helpers/redis.js'

const YAML = 'authz_listen: "127.0.0.1:0"\n'

async function verify (gw: TestGateway, caller: string | undefined, body: unknown): Promise<RawResponse> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' }
  if (caller !== undefined) headers.Authorization = `Bearer ${caller}`
  return await send(gw.authzPort, 'POST', '/v1/verify', headers, typeof body === 'string' ? body : JSON.stringify(body))
}

const json = (res: RawResponse): Record<string, unknown> => JSON.parse(res.body) as Record<string, unknown>

let gw: TestGateway
let caller: string
t.before(async () => {
  gw = await startGateway(t, { yaml: YAML })
  await gw.fixtures.role('verifier', ['keygate:keys:verify'])
  caller = (await gw.fixtures.botKey('verifier', 'acme')).key
})

t.test('a valid key: its id, type, org, user, role and effective permissions', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const res = await verify(gw, caller, { key: alice.key })
  t.equal(res.status, 200)
  t.same(json(res), {
    valid: true, key_id: alice.id, type: 'personal', org: 'acme', user: 'alice', role: 'reader', permissions: ['users:read']
  })
  const bot = await gw.fixtures.botKey('writer', 'globex', { expiresInMs: 3_600_000 })
  const b = json(await verify(gw, caller, { key: bot.key, permissions: ['users:read', 'users:write'] }))
  t.equal(b.valid, true)
  t.equal(b.type, 'bot')
  t.equal(b.user, undefined, 'a BOT key names no user')
  t.same(b.permissions, ['users:*'])
  t.ok(typeof b.expires_at === 'string' && Date.parse(b.expires_at) > Date.now(), 'expires_at')
})

t.test('unknown, malformed and forbidden keys are invalid, with their code', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const unknown = alice.key.slice(0, -8) + 'AAAAAAAA'
  t.same(json(await verify(gw, caller, { key: unknown })), { valid: false, code: 'unauthorized' })
  t.same(json(await verify(gw, caller, { key: 'not a key' })), { valid: false, code: 'unauthorized' })
  t.same(json(await verify(gw, caller, { key: alice.key, permissions: ['users:write'] })), { valid: false, code: 'forbidden' })
  t.same(json(await verify(gw, caller, { key: alice.key, permissions: ['keygate:admin'] })), { valid: false, code: 'forbidden' })
  const revoked = await gw.fixtures.botKey('reader', 'acme')
  await gw.fixtures.admin.revokeKey(revoked.id)
  t.same(json(await verify(gw, caller, { key: revoked.key })), { valid: false, code: 'unauthorized' })
})

t.test('the caller: no key 401, a key without keygate:keys:verify 403, the body unread', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const none = await verify(gw, undefined, { key: alice.key })
  t.equal(none.status, 401)
  t.equal(json(none).error !== undefined, true, 'an error object')
  t.equal((await verify(gw, 'kg_garbage', { key: alice.key })).status, 401)
  const admin = await gw.fixtures.botKey('admin', 'acme')
  const refused = await verify(gw, admin.key, { key: alice.key })
  t.equal(refused.status, 403, '* grants no keygate: permission')
  t.match(refused.headers['www-authenticate'], /keygate:keys:verify/)
  t.equal((await verify(gw, alice.key, { key: alice.key })).status, 403)
})

t.test('a body that is no question: 400 with details, a path attack in permissions among them', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  for (const permissions of [['../admin'], ['users:read/../x'], ['users:%2e%2e'], ['users:*'], ['*'], ['USERS:READ']]) {
    const res = await verify(gw, caller, { key: alice.key, permissions })
    t.equal(res.status, 400, JSON.stringify(permissions))
    t.same((json(res).error as { details: unknown[] }).details, [{ field: 'permissions.0', reason: 'expected resource:action, in lower case' }])
  }
  for (const body of [{}, { key: alice.key, extra: 1 }, { key: alice.key, cost: -1 }, { key: alice.key, cost: 1.5 }, { key: 7 }]) {
    const res = await verify(gw, caller, body)
    t.equal(res.status, 400, JSON.stringify(body))
    t.ok(((json(res).error as { details?: unknown[] }).details ?? []).length > 0, 'details')
  }
  t.equal((await verify(gw, caller, '{"key":')).status, 400, 'not JSON')
  t.equal((await verify(gw, caller, JSON.stringify({ key: alice.key, pad: 'x'.repeat(20_000) }))).status, 413)
})

t.test('cost: the quota spent only when given; a metered key\'s quota read without one', async (t) => {
  const { result: k } = await gw.fixtures.admin.createKey({ type: 'bot', role: 'reader', org: 'acme', quota: '5/day' })
  const first = json(await verify(gw, caller, { key: k.key, cost: 2 }))
  t.equal(first.valid, true)
  t.equal((first.quota as { remaining: number }).remaining, 3)
  t.ok((first.quota as { reset_s: number }).reset_s > 0)
  const free = json(await verify(gw, caller, { key: k.key }))
  t.equal(free.valid, true)
  t.equal((free.quota as { remaining: number }).remaining, 3, 'no cost: the quota read, nothing spent')
  t.equal((json(await verify(gw, caller, { key: k.key, cost: 3 })).quota as { remaining: number }).remaining, 0, 'nothing spent without a cost')
  const empty = json(await verify(gw, caller, { key: k.key }))
  t.same([empty.valid, empty.quota], [true, { remaining: 0, reset_s: (empty.quota as { reset_s: number }).reset_s }], 'an empty allowance is still valid without a cost')
  t.same(json(await verify(gw, caller, { key: k.key, cost: 1 })), { valid: false, code: 'quota_exceeded' })
  const unmetered = json(await verify(gw, caller, { key: (await gw.fixtures.botKey('reader', 'acme')).key }))
  t.equal(unmetered.quota, undefined, 'a key with no allowance: no quota')
})

t.test('a BOT key of an identity with meta: its identity and the merged meta, exactly', async (t) => {
  const admin = gw.fixtures.admin
  await admin.putIdentity('cust-9', { org: 'acme', externalId: 'cus_9', meta: { plan: 'pro', seats: 3, tags: ['a', 'b'] }, quota: '10/day' })
  const { result: k } = await admin.createKey({ type: 'bot', role: 'reader', org: 'acme', identity: 'cust-9', meta: { plan: 'enterprise', region: 'eu' } })
  const res = await verify(gw, caller, { key: k.key, permissions: ['users:read'], cost: 1 })
  t.equal(res.status, 200)
  const answer = json(res)
  t.same(answer, {
    valid: true,
    key_id: k.id,
    type: 'bot',
    org: 'acme',
    role: 'reader',
    identity: { id: 'cust-9', external_id: 'cus_9' },
    permissions: ['users:read'],
    meta: { plan: 'enterprise', seats: 3, tags: ['a', 'b'], region: 'eu' },
    quota: { remaining: 9, reset_s: (answer.quota as { reset_s: number }).reset_s }
  })
  t.same(Object.keys(answer), ['valid', 'key_id', 'type', 'org', 'role', 'identity', 'permissions', 'meta', 'quota'], 'in the order of docs/verify.md')
  t.ok((answer.quota as { reset_s: number }).reset_s > 0, 'the identity\'s quota, with its refill')

  // a key of its own meta and no identity: its meta alone, no identity
  const { result: own } = await admin.createKey({ type: 'bot', role: 'reader', org: 'acme', meta: { tier: 'gold' } })
  const alone = json(await verify(gw, caller, { key: own.key }))
  t.same([alone.identity, alone.meta], [undefined, { tier: 'gold' }])
  // a refused key of an identity says its code only
  t.same(json(await verify(gw, caller, { key: k.key, permissions: ['users:write'] })), { valid: false, code: 'forbidden' })
  t.notOk(gw.rawLogs.some((l) => l.includes('enterprise')), 'the meta is in no log line')
})

t.test('one log line per call, the caller key id, never the key asked about', async (t) => {
  const alice = await gw.fixtures.personalKey('alice')
  const res = await verify(gw, caller, { key: alice.key, permissions: ['users:write'] })
  const line = await gw.logOf(res)
  t.equal(line?.mode, 'authz')
  t.equal(line?.path, '/v1/verify')
  t.equal(line?.status, 200)
  t.equal(line?.reason, 'missing_permission')
  t.equal(gw.logs.filter((l) => l.req_id === res.headers['x-request-id']).length, 1)
  t.notOk(gw.rawLogs.some((l) => l.includes(alice.key)), 'the key is in no log line')
  t.notOk(gw.rawLogs.some((l) => l.includes(caller)), 'nor the caller key')
})

t.test('a revoked key is invalid within 1 s on two instances sharing the registry', async (t) => {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const prefix = uniquePrefix()
  const a = await startGateway(t, { yaml: YAML, redis, prefix })
  const b = await startGateway(t, { yaml: YAML, redis, prefix, seed: false })
  await a.fixtures.role('verifier', ['keygate:keys:verify'])
  const who = (await a.fixtures.botKey('verifier', 'acme')).key
  const key = await a.fixtures.botKey('reader', 'acme')
  for (const gw of [a, b]) t.equal(json(await verify(gw, who, { key: key.key })).valid, true, 'valid, and cached')
  await a.fixtures.admin.revokeKey(key.id)
  const revokedAt = Date.now()
  const invalidAt = await Promise.all([a, b].map(async (gw) => {
    for (;;) {
      if (json(await verify(gw, who, { key: key.key })).valid === false) return Date.now()
      if (Date.now() - revokedAt > 3000) return Infinity
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }))
  for (const at of invalidAt) t.ok(at - revokedAt < 1000, `invalid after ${at - revokedAt} ms`)
})
