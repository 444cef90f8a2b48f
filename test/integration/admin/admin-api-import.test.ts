/**
 * POST /admin/v1/keys/import: keys brought from another system through the admin API,
 * the same records as `keygate keys import`'s lines and the same admin action
 * (src/admin/actions/imports.ts importKeys), against real Redis and the real gateway.
 *
 * - an admin imports a Kong-style plaintext and an Unkey-style SHA-256: the answer
 *   holds the key ids only; both keys work at the gateway with their identity; the
 *   plaintext is in no Redis key or value (SCAN) and no log line;
 * - an org admin imports exactly the keys it could create: BOT keys of its own org with
 *   a role within its grants (expiring as its BOT keys do); another org, a role beyond
 *   its grants, another user's personal key: refused, nothing written, and a user of
 *   another org answered exactly as a missing one; a self principal is refused;
 * - a batch with two bad records lists both with their index and writes nothing;
 * - bounds: records, body size, a keygate key in a record; the org's key policy.
 */
import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { adminCall as call, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { dumpRedis } from '../../helpers/redis-dump.js'
import { dumpRegistry } from '../../helpers/registry-files.js'

const TOKEN = 'import-admin-token-0123456789abcdef'
const ON = 'keys: { accept_imported: true }\n'
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex')
const foreignKey = (): string => randomBytes(16).toString('hex')

interface Imported { keys: Array<{ index: number, id: string, type: string, org: string, name: string }> }
interface Refusal { error: { code: string, status: number, details?: Array<{ field: string, reason: string }> } }

/** The registry without the refusal aggregates (a refused attempt is counted there, and nothing else is written). */
async function registryState (gw: TestGateway): Promise<Record<string, unknown>> {
  const all = await dumpRegistry(gw)
  return Object.fromEntries(Object.entries(all).filter(([k]) => !k.startsWith(`${gw.prefix}audit:refused`)))
}

async function world (t: Test): Promise<{ gw: TestGateway, olga: string, sam: string }> {
  const gw = await startGateway(t, { yaml: ON, env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  await gw.fixtures.role('orgadmin', ['keygate:org:admin', 'users:read', 'orgs:read'])
  await gw.fixtures.role('selfservice', ['keygate:keys:self', 'users:read'])
  await gw.fixtures.user('olga', 'acme', 'orgadmin')
  await gw.fixtures.user('sam', 'acme', 'selfservice')
  return { gw, olga: (await gw.fixtures.personalKey('olga')).key, sam: (await gw.fixtures.personalKey('sam')).key }
}

t.test('an admin imports a Kong plaintext and an Unkey hash: key ids back, both work, no plaintext stored', async (t) => {
  const { gw } = await world(t)
  const kong = foreignKey()
  const unkey = `uk_${randomBytes(16).toString('base64url').replace(/[-_]/g, 'x')}`
  const res = await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, [
    { type: 'personal', user: 'alice', name: 'kong alice', key: kong },
    { type: 'bot', role: 'orgreader', org: 'globex', name: 'unkey ci', sha256: sha256(unkey), expires_at: '2099-01-01T00:00:00Z' }
  ])
  t.equal(res.status, 201, res.body)
  const { keys } = res.json() as Imported
  t.same(keys.map((k) => [k.index, k.type, k.org, k.name]), [[0, 'personal', 'acme', 'kong alice'], [1, 'bot', 'globex', 'unkey ci']])
  const [kongId, unkeyId] = keys.map((k) => k.id) as [string, string]
  t.match(kongId, /^[0-9A-Za-z]{16}$/)
  for (const secret of [kong, sha256(kong), sha256(unkey)]) t.notOk(res.body.includes(secret), 'the answer holds neither a key nor a hash')

  t.equal((await gw.get('/api/v1/users', kong)).status, 200, 'the Kong key works as it is')
  t.match(gw.upstream.last()?.headers, { 'x-auth-key-id': kongId, 'x-auth-user-id': 'alice', 'x-auth-org-id': 'acme' })
  t.equal((await gw.get('/api/v1/orgs/globex/projects', unkey)).status, 200, 'the Unkey key works as it is')
  t.match(gw.upstream.last()?.headers, { 'x-auth-key-id': unkeyId, 'x-auth-org-id': 'globex' })
  t.equal((await gw.get('/api/v1/orgs/acme/projects', unkey)).status, 403, 'decided like any key: its own org only')

  const dump = await dumpRedis(gw)
  t.notOk(dump.includes(kong), 'the plaintext is in no Redis key or value')
  t.ok(dump.includes(sha256(kong)), '(the dump covers the records: the SHA-256 is there)')
  t.notOk(gw.rawLogs.some((l) => l.includes(kong)), 'no log line holds the plaintext')
  const audit = (await call(gw, 'GET', '/admin/v1/audit?since=1h&limit=100', TOKEN)).json() as { entries: Array<{ action: string, actor: string, target: string }> }
  t.same(audit.entries.filter((e) => e.action === 'key.import').map((e) => [e.actor, e.target]).sort(), [['admin-token', `key:${kongId}`], ['admin-token', `key:${unkeyId}`]].sort(), 'one key.import entry per key, with the caller')

  const again = await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, [{ type: 'personal', user: 'bob', key: kong }])
  t.equal(again.status, 400, 'a key imported before is refused')
  t.match((again.json() as Refusal).error.details, [{ field: 'record 0: key', reason: /already imported/ }])
})

t.test('an org admin imports only what it could create; everything else changes nothing', async (t) => {
  const { gw, olga, sam } = await world(t)
  const before = await registryState(gw)
  const good = { type: 'bot', role: 'reader', org: 'acme', name: 'legacy', key: foreignKey() }
  const refused: Array<[string, unknown[], number, RegExp]> = [
    ['a BOT key in another org', [{ type: 'bot', role: 'reader', org: 'globex', key: foreignKey() }], 403, /record 0: .*own org/],
    ['a good record beside one of another org', [good, { type: 'bot', role: 'orgreader', org: 'globex', sha256: sha256('g') }], 403, /record 1: /],
    ['a role beyond its grants', [{ type: 'bot', role: 'admin', org: 'acme', key: foreignKey() }], 403, /record 0: .*not within the caller's own permissions/],
    ['another user\'s personal key', [{ type: 'personal', user: 'alice', key: foreignKey() }], 403, /record 0: user: a personal key acts as its user/]
  ]
  for (const [what, body, status, detail] of refused) {
    const res = await call(gw, 'POST', '/admin/v1/keys/import', olga, body)
    t.equal(res.status, status, what)
    t.match(JSON.stringify((res.json() as Refusal).error.details), detail, `${what}: the record named`)
  }
  t.same(await registryState(gw), before, 'nothing written by any of them')
  t.equal((await gw.get('/api/v1/users', good.key)).status, 401, 'the good record of a refused batch was not imported')

  // another org's user is answered exactly as a user that does not exist
  const carol = await call(gw, 'POST', '/admin/v1/keys/import', olga, [{ type: 'personal', user: 'carol', key: foreignKey() }])
  const ghost = await call(gw, 'POST', '/admin/v1/keys/import', olga, [{ type: 'personal', user: 'ghost', key: foreignKey() }])
  t.equal(carol.status, ghost.status)
  t.same((carol.json() as Refusal).error.details?.map((d) => d.reason.replace('carol', 'X')), (ghost.json() as Refusal).error.details?.map((d) => d.reason.replace('ghost', 'X')), 'the same answer for another org\'s user and a missing one')
  t.same(await registryState(gw), before, 'nothing written')

  t.equal((await call(gw, 'POST', '/admin/v1/keys/import', sam, [good])).status, 403, 'keygate:keys:self: 403')
  t.same(await registryState(gw), before)

  const ok = await call(gw, 'POST', '/admin/v1/keys/import', olga, [good])
  t.equal(ok.status, 201, ok.body)
  const id = (ok.json() as Imported).keys[0]?.id as string
  const record = await gw.client.hgetall(gw.fixtures.keys.key(id))
  t.match(record, { type: 'bot', role: 'reader', org: 'acme', imported: 'key', created_by: /^user:olga$/ })
  const expires = Date.parse(record.expires_at ?? '')
  t.ok(expires > Date.now() + 89 * 86_400_000 && expires <= Date.now() + 90 * 86_400_000, 'it expires as an org admin\'s BOT keys do (admin.self_service_max_ttl)')
  t.equal((await gw.get('/api/v1/users', good.key)).status, 200, 'the imported key works')
  t.equal(gw.upstream.last()?.headers['x-auth-key-id'], id)
  const longer = await call(gw, 'POST', '/admin/v1/keys/import', olga, [{ ...good, key: foreignKey(), expires_at: '2099-01-01T00:00:00Z' }])
  t.equal(longer.status, 400, 'an expiry beyond what it may give is refused, not shortened')
  t.match((longer.json() as Refusal).error.details, [{ field: 'record 0: expires_at' }])
})

t.test('a batch with two bad records lists both, with their index, and writes nothing', async (t) => {
  const { gw } = await world(t)
  const before = await registryState(gw)
  const good = foreignKey()
  const res = await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, [
    { type: 'personal', user: 'alice', key: good },
    { type: 'bot', role: 'reader', org: 'acme', sha256: 'ABC', colour: 'red' },
    { type: 'bot', role: 'reader', org: 'acme', sha256: sha256('fine') },
    { type: 'personal', user: 'alice', key: 'has spaces in it' }
  ])
  t.equal(res.status, 400)
  t.same((res.json() as Refusal).error.details?.map((d) => d.field), ['record 1: colour', 'record 3: key'], 'every bad record, by its index')
  const refs = await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, [
    { type: 'personal', user: 'ghost', key: good },
    { type: 'bot', role: 'reader', org: 'acme', sha256: sha256('fine') },
    { type: 'bot', role: 'nosuchrole', org: 'acme', sha256: sha256('r') }
  ])
  t.equal(refs.status, 400)
  t.same((refs.json() as Refusal).error.details?.map((d) => d.field), ['record 0: user', 'record 2: role'], 'references too: every one at once')
  t.same(await registryState(gw), before, 'nothing written')
  t.equal((await gw.get('/api/v1/users', good)).status, 401)
})

t.test('bounds: records, body size, keygate keys, the org key policy', async (t) => {
  const { gw } = await world(t)
  const record = (i: number): unknown => ({ type: 'bot', role: 'reader', org: 'acme', sha256: sha256(String(i)) })
  t.equal((await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, Array.from({ length: 1001 }, (_, i) => record(i)))).status, 400, 'at most 1,000 records')
  t.equal((await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, [])).status, 400, 'at least one')
  t.equal((await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, { type: 'bot' })).status, 400, 'an array, not an object')
  t.equal((await call(gw, 'POST', '/admin/v1/keys/import', TOKEN)).status, 400, 'no body')
  const big = JSON.stringify([{ type: 'bot', role: 'reader', org: 'acme', name: 'x'.repeat(1024 * 1024), sha256: sha256('big') }])
  t.equal((await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, big)).status, 413, 'a body over 1 MiB')
  const native = await gw.fixtures.personalKey('bob')
  const withNative = await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, [{ type: 'personal', user: 'alice', key: native.key }])
  t.equal(withNative.status, 400, 'a keygate key is refused unread')
  t.notOk(gw.rawLogs.some((l) => l.includes(native.key)), 'and logged nowhere')

  t.equal((await call(gw, 'PUT', '/admin/v1/orgs/acme', TOKEN, { key_max_ttl: '30d' })).status, 200)
  const beyond = await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, [{ type: 'bot', role: 'reader', org: 'acme', sha256: sha256('p1'), expires_at: '2099-01-01T00:00:00Z' }])
  t.equal(beyond.status, 400, 'an expiry beyond the org\'s key_max_ttl is refused')
  t.match((beyond.json() as Refusal).error.details, [{ field: 'record 0: expires_at', reason: /key_max_ttl/ }])
  const capped = await call(gw, 'POST', '/admin/v1/keys/import', TOKEN, [{ type: 'bot', role: 'reader', org: 'acme', sha256: sha256('p2') }])
  t.equal(capped.status, 201)
  const expires = Date.parse(await gw.client.hget(gw.fixtures.keys.key((capped.json() as Imported).keys[0]?.id as string), 'expires_at') ?? '')
  t.ok(expires > Date.now() + 29 * 86_400_000 && expires <= Date.now() + 30 * 86_400_000, 'no expiry given: the org\'s cap')
})
