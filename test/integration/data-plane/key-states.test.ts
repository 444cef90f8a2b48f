// The key's and its user's state as recorded in Redis decides, and direct edits with
// redis-cli are honoured within 1 s. Bad records deny with 401 or 403: never 200,
// never 500. The decisions themselves (each state, each malformed field, the expiry
// boundary) are the unit tables in test/unit/decision/decide.test.ts and
// test/unit/registry/records.test.ts; here is what needs Redis: state changes
// reaching a running gateway, and records as Redis holds them.
import t from 'tap'
import type { Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { eventually, startGateway } from '../../helpers/gateway.js'
import type { RawResponse } from '../../helpers/raw-http.js'
import { generateKey, hashSecret } from '../../../src/registry/key-format.js'

const gw = await startGateway(t)
const f = gw.fixtures
const K = f.keys
const prefix = gw.config.keys.prefix

/** The promised bound for direct edits is 1 s (docs/cache.md); allow a small margin for polling and scheduling. */
const BOUND_MS = 1500
const INVALID_TOKEN = 'Bearer realm="keygate", error="invalid_token"'

const uid = (): string => randomBytes(4).toString('hex')
const statusOf = async (key: string, path = '/api/v1/users'): Promise<number> => (await gw.get(path, key)).status

function isUnauthorized (t: Test, res: RawResponse, what: string): void {
  t.equal(res.status, 401, `${what}: 401`)
  t.equal((res.json() as { error?: { code?: string } } | null)?.error?.code, 'unauthorized', `${what}: unauthorized body`)
  t.equal(res.headers['www-authenticate'], INVALID_TOKEN, `${what}: invalid_token challenge`)
}

/** Polls until `check` holds; asserts it held within the 1 s bound (plus margin). */
async function honouredWithin1s (t: Test, what: string, check: () => Promise<boolean>): Promise<void> {
  const ms = await eventually(check, 3000, 10)
  t.ok(ms >= 0 && ms <= BOUND_MS, `${what} within 1 s (took ${ms === -1 ? 'over 3000' : ms} ms)`)
}

t.test('key status and expiry', async (t) => {
  t.test('a key is refused as soon as its expires_at passes, even right after being accepted', async (t) => {
    const { id, key } = await f.personalKey('alice', { expiresInMs: 1200 })
    t.equal(await statusOf(key), 200, 'before expiry')
    const expiresAt = Date.parse(await gw.client.hget(K.key(id), 'expires_at') ?? '')
    t.ok(Number.isFinite(expiresAt), 'expires_at is a timestamp')
    while (Date.now() <= expiresAt + 5) await new Promise((resolve) => setTimeout(resolve, 20))
    isUnauthorized(t, await gw.get('/api/v1/users', key), 'just expired')
  })

  t.test('a changed hash: the right one is accepted, a wrong one refused', async (t) => {
    // a well-formed key whose record stores the hash of some other secret
    const g = generateKey(prefix)
    const other = generateKey(prefix)
    await gw.client.hset(K.key(g.id), {
      type: 'bot',
      hash: other.hash,
      org: 'acme',
      role: 'admin',
      name: 'm',
      status: 'active',
      created_at: '2025-01-01T00:00:00Z',
      created_by: 'cli:test'
    })
    isUnauthorized(t, await gw.get('/api/v1/users', g.key), 'stored hash of another secret')
    // the same record with the right hash: accepted (so it was the secret that failed)
    await gw.client.hset(K.key(g.id), 'hash', g.hash)
    await honouredWithin1s(t, 'the right hash is accepted', async () => await statusOf(g.key) === 200)

    // an existing, working key whose stored hash is changed by hand
    const { id, key } = await f.botKey('admin', 'acme')
    t.equal(await statusOf(key), 200, 'works before the edit')
    await f.hset(K.key(id), 'hash', hashSecret('some other secret'))
    await honouredWithin1s(t, 'a changed hash is refused', async () => await statusOf(key) === 401)
    isUnauthorized(t, await gw.get('/api/v1/users', key), 'changed hash')
  })
  t.end()
})

t.test('personal keys follow their user', async (t) => {
  t.test('deactivated user: 401; reactivated: 200 again; the key record is never touched', async (t) => {
    const user = `u-${uid()}`
    await f.user(user, 'acme', 'reader')
    const { id, key } = await f.personalKey(user)
    t.equal(await statusOf(key), 200, 'active user')
    const record = await gw.client.hgetall(K.key(id))

    await f.hset(K.user(user), 'status', 'deactivated')
    await honouredWithin1s(t, 'deactivation', async () => await statusOf(key) === 401)
    isUnauthorized(t, await gw.get('/api/v1/users', key), 'deactivated user')
    t.same(await gw.client.hgetall(K.key(id)), record, 'key record untouched by the deactivation')

    await f.hset(K.user(user), 'status', 'active')
    await honouredWithin1s(t, 'reactivation', async () => await statusOf(key) === 200)
    t.same(await gw.client.hgetall(K.key(id)), record, 'key record untouched by the reactivation')
  })

  t.test('a BOT key keeps working after its creator is deactivated', async (t) => {
    const creator = `u-${uid()}`
    await f.user(creator, 'acme', 'writer')
    const personal = await f.personalKey(creator)
    const bot = await f.botKey('reader', 'acme', { createdBy: creator })
    t.equal(await gw.client.hget(K.key(bot.id), 'created_by'), `user:${creator}`, 'the BOT key records its creator')
    t.equal(await statusOf(bot.key), 200, 'before')
    await f.hset(K.user(creator), 'status', 'deactivated')
    // the deactivation has taken effect (the creator's own key is refused)...
    await honouredWithin1s(t, "the creator's personal key is refused", async () => await statusOf(personal.key) === 401)
    // ...and past the 1 s propagation bound the BOT key still works
    await new Promise((resolve) => setTimeout(resolve, 1100))
    t.equal(await statusOf(bot.key), 200, 'BOT key after the creator was deactivated')
    await gw.client.del(K.user(creator))
    await new Promise((resolve) => setTimeout(resolve, 1100))
    t.equal(await statusOf(bot.key), 200, 'BOT key after the creator was deleted')
  })
  t.end()
})

t.test('direct Redis edits are honoured within 1 s', async (t) => {
  t.test('HSET role permissions: removing and granting a permission', async (t) => {
    const role = `r-${uid()}`
    const user = `u-${uid()}`
    await f.role(role, ['users:read'])
    await f.user(user, 'acme', role)
    const { key } = await f.personalKey(user)
    t.equal(await statusOf(key), 200, 'granted (and now cached)')
    await f.hset(K.role(role), 'permissions', 'orgs:read')
    await honouredWithin1s(t, 'permission removed', async () => await statusOf(key) === 403)
    await f.hset(K.role(role), 'permissions', 'orgs:read users:read')
    await honouredWithin1s(t, 'permission granted', async () => await statusOf(key) === 200)
    await gw.client.del(K.role(role))
    await honouredWithin1s(t, 'role deleted: grants nothing', async () => await statusOf(key) === 403)
  })

  t.test("HSET user role: the personal key acts with the user's new role", async (t) => {
    const user = `u-${uid()}`
    await f.user(user, 'acme', 'reader')
    const { key } = await f.personalKey(user)
    t.equal(await statusOf(key), 200, 'reader reads users')
    await f.hset(K.user(user), 'role', 'orgreader')
    await honouredWithin1s(t, 'role changed to orgreader', async () => await statusOf(key) === 403)
    t.equal(await statusOf(key, '/api/v1/orgs/acme/x'), 200, 'orgreader reads its org')
  })

  t.test('HSET key role: a BOT key acts with its new role', async (t) => {
    const { id, key } = await f.botKey('none', 'acme')
    t.equal(await statusOf(key), 403, 'role none')
    await f.hset(K.key(id), 'role', 'reader')
    await honouredWithin1s(t, 'role changed to reader', async () => await statusOf(key) === 200)
  })

  t.test('HSET key status revoked', async (t) => {
    const { id, key } = await f.botKey('admin', 'acme')
    t.equal(await statusOf(key), 200, 'accepted (and now cached)')
    await f.hset(K.key(id), 'status', 'revoked')
    await honouredWithin1s(t, 'revocation', async () => await statusOf(key) === 401)
  })

  t.test('DEL key record', async (t) => {
    const { id, key } = await f.personalKey('alice')
    t.equal(await statusOf(key), 200, 'accepted (and now cached)')
    await gw.client.del(K.key(id))
    await honouredWithin1s(t, 'deleted key refused', async () => await statusOf(key) === 401)
  })

  t.test('a key created after being refused as unknown works within 1 s', async (t) => {
    const g = generateKey(prefix)
    t.equal(await statusOf(g.key), 401, 'unknown (and now negatively cached)')
    await gw.client.hset(K.key(g.id), {
      type: 'bot',
      hash: g.hash,
      org: 'acme',
      role: 'admin',
      name: 'late',
      status: 'active',
      created_at: '2025-01-01T00:00:00Z',
      created_by: 'cli:test'
    })
    await honouredWithin1s(t, 'new key accepted', async () => await statusOf(g.key) === 200)
  })
  t.end()
})

/**
 * Bad records, written directly as an admin with redis-cli could. Each row is a
 * key record (and for personal keys optionally a user record) merged over a
 * well-formed one; `undefined` deletes the field. The request goes to a rule
 * that needs no permission, so only the records can deny it.
 */
interface RecordRow {
  what: string
  key?: Record<string, string | undefined>
  user?: Record<string, string | undefined>
  allow?: true
}
const BOT = { type: 'bot', user: undefined, role: 'admin' }

const records: RecordRow[] = [
  // controls: the rows below differ from these only in what they name
  { what: 'well-formed personal key (control)', allow: true },
  { what: 'well-formed BOT key (control)', key: BOT, allow: true },
  { what: 'well-formed, future expires_at (control)', key: { expires_at: '2999-01-01T00:00:00Z' }, allow: true },

  // one row per record as the gateway reads it from Redis; every field rule is a row of
  // test/unit/registry/records.test.ts
  { what: 'personal key of an unknown type', key: { type: 'service' } },
  { what: 'garbage expires_at', key: { expires_at: 'tomorrow' } },
  { what: 'BOT key with no role', key: { ...BOT, role: undefined } },
  { what: 'user with an unknown status', user: { status: 'suspended' } }
]

t.test('bad records deny: 401 or 403, never 200, never 500', async (t) => {
  for (const row of records) {
    t.test(row.what, async (t) => {
      const g = generateKey(prefix)
      const userId = `u-${uid()}`
      const user = { org: 'acme', role: 'admin', status: 'active', ...row.user }
      await gw.client.hset(K.user(userId), defined(user))
      const key = {
        type: 'personal',
        hash: g.hash,
        org: 'acme',
        user: userId,
        name: 'hand-written',
        status: 'active',
        created_at: '2025-01-01T00:00:00Z',
        created_by: 'cli:test',
        ...row.key
      }
      await gw.client.hset(K.key(g.id), defined(key))
      const before = gw.upstream.requests.length
      const res = await gw.get('/api/v1/open/x', g.key)
      if (row.allow === true) {
        t.equal(res.status, 200, 'accepted')
        return
      }
      t.ok(res.status === 401 || res.status === 403, `denied with 401 or 403 (got ${res.status})`)
      const body = res.json() as { error?: { status?: number } } | null
      t.equal(body?.error?.status, res.status, 'an error body')
      t.equal(gw.upstream.requests.length, before, 'never forwarded')
    })
  }
  t.end()
})

t.test('a registry entry of the wrong Redis type denies that key only', async (t) => {
  const g = generateKey(prefix)
  await gw.client.set(K.key(g.id), 'not a hash')
  const res = await gw.get('/api/v1/open/x', g.key)
  t.ok(res.status === 401 || res.status === 403, `denied with 401 or 403 (got ${res.status})`)
  const { key } = await f.botKey('admin', 'acme')
  t.equal(await statusOf(key), 200, 'other keys keep working')
})

function defined (fields: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(fields)) if (value !== undefined) out[name] = value
  return out
}
