/**
 * Who may call the admin API (/admin/v1 on the admin listener), against real Redis
 * and real sockets:
 *
 * - no credential: 401 with `WWW-Authenticate: Bearer realm="keygate"`; a wrong
 *   token, a malformed, unknown, revoked or expired key, or a deactivated user:
 *   401 with `error="invalid_token"`. Authentication precedes everything, 404 included.
 * - the admin token (KEYGATE_ADMIN_TOKEN only; unset = token sign-in off), a key
 *   granting `keygate:admin` by name: full control. `*` grants no `keygate:` permission.
 * - a personal key granting `keygate:keys:self`: its own keys only; every other route
 *   is 403 naming the permission it needs (`keygate:org:admin` for users, rotation and
 *   the audit trail, `keygate:admin` for roles and permissions). A BOT key gets nothing
 *   from keys:self. (The org admin's scope: test/regressions/cross-tenant-admin.test.ts.)
 * - a key granting neither: 403 on every route.
 * - sign-in uses the data plane's own checks: a key revoked directly in Redis loses
 *   admin access; Redis down: 503 for a key that is not cached.
 */
import t from 'tap'
import type { Test } from 'tap'
import { parseConfig } from '../../../src/config/load.js'
import { adminCall as call, eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import { send, type RawResponse } from '../../helpers/raw-http.js'
import { startPrivateRedis, type TestRedis } from '../../helpers/redis.js'

const TOKEN = 'test-admin-token-0123456789abcdef'
const REALM = 'Bearer realm="keygate"'

/** A redis-server of our own, whatever REDIS_URL says (this suite stops it). */
async function privateRedis (t: Test): Promise<TestRedis> {
  const redis = await startPrivateRedis()
  t.teardown(() => redis.stop())
  return redis
}

function errorOf (res: RawResponse): unknown {
  return (res.json() as { error: unknown }).error
}

const ADMIN = 'keygate:admin'
const ORG_ADMIN = 'keygate:org:admin'

/**
 * One request per route, with a valid shape, so that only access decides the answer.
 * `needs`: the permission a self principal lacks for it (its 403's challenge scope).
 */
const ROUTES: Array<{ method: string, path: string, body?: unknown, needs?: string }> = [
  { method: 'GET', path: '/admin/v1/session' },
  { method: 'GET', path: '/admin/v1/permissions', needs: ADMIN },
  { method: 'GET', path: '/admin/v1/keys' },
  { method: 'POST', path: '/admin/v1/keys', body: { type: 'personal' } },
  { method: 'GET', path: '/admin/v1/keys/AAAAAAAAAAAAAAAA' },
  { method: 'POST', path: '/admin/v1/keys/AAAAAAAAAAAAAAAA/revoke' },
  { method: 'POST', path: '/admin/v1/keys/AAAAAAAAAAAAAAAA/rotate', body: { grace: '1h' } },
  { method: 'POST', path: '/admin/v1/keys/AAAAAAAAAAAAAAAA/restrict', body: { scope: ['users:read'] } },
  { method: 'GET', path: '/admin/v1/users', needs: ORG_ADMIN },
  { method: 'GET', path: '/admin/v1/users/alice' },
  { method: 'PUT', path: '/admin/v1/users/zed', body: { org: 'acme', role: 'reader' }, needs: ORG_ADMIN },
  { method: 'POST', path: '/admin/v1/users/alice/deactivate', needs: ORG_ADMIN },
  { method: 'POST', path: '/admin/v1/users/alice/activate', needs: ORG_ADMIN },
  { method: 'GET', path: '/admin/v1/roles' },
  { method: 'PUT', path: '/admin/v1/roles/extra', body: { permissions: ['users:read'] }, needs: ADMIN },
  { method: 'DELETE', path: '/admin/v1/roles/extra?force=true', needs: ADMIN },
  { method: 'GET', path: '/admin/v1/audit?since=1h', needs: ORG_ADMIN }
]

async function authWorld (gw: TestGateway): Promise<Record<string, { id: string, key: string }>> {
  const f = gw.fixtures
  await f.role('keyadmin', ['keygate:admin'])
  await f.role('selfreader', ['users:read', 'keygate:keys:self'])
  await f.user('dora', 'acme', 'keyadmin')
  await f.user('sam', 'acme', 'selfreader')
  return {
    adminPersonal: await f.personalKey('dora'),
    adminBot: await f.botKey('keyadmin', 'acme'),
    star: await f.botKey('admin', 'acme'),
    self: await f.personalKey('sam'),
    selfBot: await f.botKey('selfreader', 'acme'),
    neither: await f.personalKey('alice')
  }
}

t.test('no credential, or a bad one: 401 with the challenge, before anything else', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const k = await authWorld(gw)

  await t.test('no Authorization header: 401, plain challenge, on every route and on unknown paths', async (t) => {
    for (const r of [...ROUTES, { method: 'GET', path: '/admin/v1/nothing-here' }]) {
      const res = await call(gw, r.method, r.path, undefined, 'body' in r ? r.body : undefined)
      t.equal(res.status, 401, `${r.method} ${r.path}`)
      t.equal(res.headers['www-authenticate'], REALM)
      t.same(errorOf(res), { code: 'unauthorized', message: 'Invalid or missing authentication key', status: 401 })
      t.match(res.headers['x-request-id'], /^[0-9a-f-]{36}$/)
    }
  })

  await t.test('another scheme: 401 with the plain challenge', async (t) => {
    const res = await send(gw.adminPort, 'GET', '/admin/v1/session', { Authorization: `Basic ${Buffer.from(`admin:${TOKEN}`).toString('base64')}` })
    t.equal(res.status, 401)
    t.equal(res.headers['www-authenticate'], REALM)
  })

  const invalid: Array<[string, string | Array<[string, string]>]> = [
    ['a wrong token', 'wrong-token-0123456789abcdef'],
    ['the token with one character changed', TOKEN.slice(0, -1) + 'X'],
    ['a prefix of the token', TOKEN.slice(0, 20)],
    // (the last character changed to another one: replacing it with a fixed 'x' left one key in 62 valid)
    ['a key with a bad checksum', (k.adminPersonal?.key ?? '').replace(/.$/, (c) => c === 'x' ? 'y' : 'x')],
    ['an unknown key', 'kg_AAAAAAAAAAAAAAAA_' + 'A'.repeat(38)],
    ['the token twice (two headers)', [['Authorization', `Bearer ${TOKEN}`], ['Authorization', `Bearer ${TOKEN}`]]]
  ]
  for (const [label, credential] of invalid) {
    await t.test(`${label}: 401 invalid_token`, async (t) => {
      const res = Array.isArray(credential)
        ? await send(gw.adminPort, 'GET', '/admin/v1/session', credential)
        : await call(gw, 'GET', '/admin/v1/session', credential)
      t.equal(res.status, 401)
      t.equal(res.headers['www-authenticate'], `${REALM}, error="invalid_token"`)
      t.same(errorOf(res), { code: 'unauthorized', message: 'Invalid or missing authentication key', status: 401 })
    })
  }

  await t.test('authentication precedes validation and routing', async (t) => {
    t.equal((await call(gw, 'POST', '/admin/v1/keys', 'nope-0123456789abcdef', { bogus: true })).status, 401, 'bad body, bad credential: 401')
    t.equal((await call(gw, 'GET', '/admin/v1/nothing-here', TOKEN)).status, 404, 'unknown path with the token: 404')
    const missing = await call(gw, 'GET', '/admin/v1/nothing-here', TOKEN)
    t.same(errorOf(missing), { code: 'not_found', message: 'Resource not found', status: 404 })
  })
})

t.test('who may do what: the access matrix over every route', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const k = await authWorld(gw)
  await gw.fixtures.role('extra', ['users:read'])

  const callers: Array<[string, string, 'admin' | 'self' | 'none']> = [
    ['the admin token', TOKEN, 'admin'],
    ['a personal key granting keygate:admin', k.adminPersonal?.key ?? '', 'admin'],
    ['a BOT key granting keygate:admin', k.adminBot?.key ?? '', 'admin'],
    ['a BOT key granting * (no keygate: permission)', k.star?.key ?? '', 'none'],
    ['a personal key granting keygate:keys:self', k.self?.key ?? '', 'self'],
    ['a BOT key granting keygate:keys:self (a BOT key has no user)', k.selfBot?.key ?? '', 'none'],
    ['a key granting neither', k.neither?.key ?? '', 'none']
  ]
  for (const [label, credential, access] of callers) {
    await t.test(label, async (t) => {
      for (const r of ROUTES) {
        const res = await call(gw, r.method, r.path, credential, r.body)
        const what = `${r.method} ${r.path}`
        if (access === 'none' || (access === 'self' && r.needs !== undefined)) {
          t.equal(res.status, 403, `${what}: 403`)
          t.same(errorOf(res), { code: 'forbidden', message: 'Insufficient permissions for this resource', status: 403 })
          t.equal(res.headers['www-authenticate'], access === 'self'
            ? `${REALM}, error="insufficient_scope", scope="${r.needs ?? ''}"`
            : `${REALM}, error="insufficient_scope"`)
        } else {
          t.not(res.status, 401, `${what}: signed in`)
          t.not(res.status, 403, `${what}: allowed (${res.status})`)
        }
      }
    })
  }

  await t.test('GET /session says who signed in', async (t) => {
    t.same((await call(gw, 'GET', '/admin/v1/session', TOKEN)).json(), { principal: { kind: 'token' }, scope: 'admin', admin: true, self: false })
    t.same((await call(gw, 'GET', '/admin/v1/session', k.self?.key)).json(), {
      principal: { kind: 'key', key_id: k.self?.id, key_type: 'personal', user: 'sam', org: 'acme', role: 'selfreader', permissions: ['users:read', 'keygate:keys:self'] },
      scope: 'self',
      admin: false,
      self: true,
      bot_key_max_ttl_s: 90 * 86400,
      grantable: ['users:read', 'keygate:keys:self'],
      catalogue: ['keygate:keys:self', 'users:read']
    })
    t.same((await call(gw, 'GET', '/admin/v1/session', k.adminBot?.key)).json(), {
      principal: { kind: 'key', key_id: k.adminBot?.id, key_type: 'bot', org: 'acme', role: 'keyadmin', permissions: ['keygate:admin'] },
      scope: 'admin',
      admin: true,
      self: false
    })
  })

  await t.test('the log line names the actor and the reason, never the credential', async (t) => {
    const denied = await call(gw, 'GET', '/admin/v1/users', k.self?.key)
    const line = gw.logs.find((l) => l.req_id === denied.headers['x-request-id'])
    t.match(line, { method: 'GET', route: '/admin/v1/users', status: 403, actor: `key:${k.self?.id}`, key_id: k.self?.id, reason: 'missing_permission' })
    const ok = await call(gw, 'GET', '/admin/v1/audit?since=1h', TOKEN)
    const okLine = gw.logs.find((l) => l.req_id === ok.headers['x-request-id'])
    t.match(okLine, { route: '/admin/v1/audit', status: 200, actor: 'admin-token' })
    t.notMatch(JSON.stringify(okLine), /since/, 'no query string in the log line')
    const all = gw.rawLogs.join('\n')
    t.notOk(all.includes(TOKEN), 'the admin token is never logged')
    for (const fixture of Object.values(k)) t.notOk(all.includes(fixture.key.slice(-38)), 'no key secret is logged')
  })
})

t.test('the admin token comes from KEYGATE_ADMIN_TOKEN only', async (t) => {
  await t.test('unset: token sign-in is off, keys still work', async (t) => {
    const gw = await startGateway(t)
    const k = await authWorld(gw)
    const res = await call(gw, 'GET', '/admin/v1/session', TOKEN)
    t.equal(res.status, 401)
    t.equal(res.headers['www-authenticate'], `${REALM}, error="invalid_token"`)
    t.equal((await call(gw, 'GET', '/admin/v1/session', k.adminPersonal?.key)).status, 200)
  })

  await t.test('set to the empty string: off as well', async (t) => {
    const config = parseConfig('routes: []', { KEYGATE_ADMIN_TOKEN: '' }, 'test', { forServing: false })
    t.equal(config.admin_token, undefined)
  })

  await t.test('in the file: refused, naming the field and not the value', async (t) => {
    const file = 'admin_token: "file-secret-0123456789abcdef"\n'
    const err = (() => { try { parseConfig(file, { KEYGATE_ADMIN_TOKEN: TOKEN }, 'test', { forServing: false }); return undefined } catch (e: unknown) { return e as Error } })()
    t.match(err?.message, /admin_token: secrets never come from the file; set KEYGATE_ADMIN_TOKEN/)
    t.notMatch(err?.message, /file-secret/)
  })

  await t.test('too short, or not sendable as a Bearer token: refused without echoing it', async (t) => {
    for (const bad of ['short-secret', 'has spaces in it 0123456789']) {
      const err = (() => { try { parseConfig('{}', { KEYGATE_ADMIN_TOKEN: bad }, 'test', { forServing: false }); return undefined } catch (e: unknown) { return e as Error } })()
      t.match(err?.message, /KEYGATE_ADMIN_TOKEN: must be at least 16 characters/)
      t.notOk(err?.message.includes(bad), 'the value is not echoed')
    }
  })
})

t.test('sign-in follows the registry: revoked, deactivated, Redis down', async (t) => {
  await t.test('a key that signs in is a key in use: its last_used_at is noted, a refused one not', async (t) => {
    const gw = await startGateway(t)
    const k = await authWorld(gw)
    t.equal((await call(gw, 'GET', '/admin/v1/session', k.self?.key ?? '')).status, 200)
    t.equal((await call(gw, 'GET', '/admin/v1/session', k.neither?.key ?? '')).status, 403)
    await gw.app.usage.flush()
    const usage = await gw.client.hgetall(gw.fixtures.keys.usage)
    t.match(usage[k.self?.id ?? ''], /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, 'the signed-in key has its last use')
    t.equal(usage[k.neither?.id ?? ''], undefined, 'a key refused by the admin API was not used')
  })

  await t.test('an admin key revoked directly in Redis gets 401 on its next admin call', async (t) => {
    const gw = await startGateway(t)
    const k = await authWorld(gw)
    const key = k.adminPersonal?.key ?? ''
    t.equal((await call(gw, 'GET', '/admin/v1/users', key)).status, 200)
    await gw.client.hset(gw.fixtures.keys.key(k.adminPersonal?.id ?? ''), 'status', 'revoked')
    const ms = await eventually(async () => (await call(gw, 'GET', '/admin/v1/users', key)).status === 401, 1500)
    t.ok(ms >= 0, `revocation honoured by the admin API (${ms} ms)`)
    const res = await call(gw, 'GET', '/admin/v1/users', key)
    t.equal(res.headers['www-authenticate'], `${REALM}, error="invalid_token"`)
    t.match(await gw.logOf(res) ?? gw.logs.find((l) => l.req_id === res.headers['x-request-id']), { reason: 'key_revoked' })
  })

  await t.test('deactivating the user of a personal admin key ends its admin access', async (t) => {
    const gw = await startGateway(t)
    const k = await authWorld(gw)
    const key = k.adminPersonal?.key ?? ''
    t.equal((await call(gw, 'GET', '/admin/v1/roles', key)).status, 200)
    await gw.client.hset(gw.fixtures.keys.user('dora'), 'status', 'deactivated')
    t.ok(await eventually(async () => (await call(gw, 'GET', '/admin/v1/roles', key)).status === 401, 1500) >= 0)
  })

  await t.test('Redis down: 503 for a key that is not cached; never 200 or 500', async (t) => {
    const redis = await privateRedis(t)
    const gw = await startGateway(t, { redis, env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
    const k = await authWorld(gw)
    await gw.redis.stop()
    await eventually(async () => !gw.app.health.up, 3000)
    const res = await call(gw, 'GET', '/admin/v1/keys', k.adminBot?.key)
    t.equal(res.status, 503)
    t.same(errorOf(res), { code: 'service_unavailable', message: 'Authentication service unavailable', status: 503 })
    const viaToken = await call(gw, 'GET', '/admin/v1/keys', TOKEN)
    t.equal(viaToken.status, 503, 'the token signs in, but the registry cannot answer: 503')
    t.same(errorOf(viaToken), { code: 'service_unavailable', message: 'Authentication service unavailable', status: 503 })
    const rotate = await call(gw, 'POST', `/admin/v1/keys/${k.self?.id ?? ''}/rotate`, TOKEN, {})
    t.equal(rotate.status, 503, 'a rotation (own connection) fails closed too')
  })
})
