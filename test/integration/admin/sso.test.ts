/**
 * SSO against a real OpenID provider (oidc-provider, test/helpers/oidc-provider.ts)
 * over real HTTP: the flow through the provider's own login form, the session it
 * begins on the admin API, and each way the sign-in is refused with no session.
 */
import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { adminCall, eventually, startGateway, type TestGateway } from '../../helpers/gateway.js'
import {
  ADMIN_TOKEN, CLIENT_ID, sendCallback, signIn, ssoError, ssoWorld, startHostileProvider, walkToCallback, walkWithoutLogin, withSession,
  type HostileMode, type SsoWorld
} from '../../helpers/oidc-provider.js'

t.test('the happy path: the provider\'s login page, a session, and what a personal key of that user may do', async (t) => {
  const w = await ssoWorld(t)
  const done = await signIn(w, 'dana')
  t.equal(done.status, 303)
  t.equal(done.location, `${w.adminUrl}/console/`, 'back to the console')
  t.ok(done.session !== undefined && done.session.length >= 22, 'a session id of at least 128 bits')
  const line = done.setCookies.find((c) => c.startsWith('keygate_session=') && !/Max-Age=0/i.test(c)) as string
  t.match(line, /; HttpOnly/i)
  t.match(line, /; SameSite=Strict/i)
  t.match(line, /; Path=\//)
  t.notMatch(line, /; Secure/i, 'an http:// redirect_uri: no Secure attribute')
  t.notMatch(line, /Domain=/i)

  const session = done.session as string
  const me = await adminCall(w.gw, 'GET', '/admin/v1/session', undefined, undefined, withSession(session))
  t.equal(me.status, 200, me.body)
  t.match(JSON.parse(me.body), { principal: { kind: 'session', user: 'dana', org: 'acme', role: 'self-service' }, scope: 'self' })

  // a personal key of one's own: created_by user:dana, and it works on the gateway
  const created = await adminCall(w.gw, 'POST', '/admin/v1/keys', undefined, { type: 'personal', name: 'laptop' }, withSession(session, { 'X-Requested-With': 'keygate' }))
  t.equal(created.status, 201, created.body)
  const key = JSON.parse(created.body) as { id: string, key: string }
  const shown = await adminCall(w.gw, 'GET', `/admin/v1/keys/${key.id}`, undefined, undefined, withSession(session))
  t.match(JSON.parse(shown.body), { user: 'dana', created_by: 'user:dana' }, 'created from a session: created_by user:<id>')
  t.equal((await w.gw.get('/api/v1/users', key.key)).status, 200)
  // another user's key: as a self principal, refused
  const other = await adminCall(w.gw, 'POST', '/admin/v1/keys', undefined, { type: 'personal', user: 'erin' }, withSession(session, { 'X-Requested-With': 'keygate' }))
  t.equal(other.status, 403)

  // the log: the user id, never the session id, code or state
  const raw = w.gw.rawLogs.join('\n')
  t.notOk(raw.includes(session), 'no session id in a log line')
  t.match(raw, /"sso sign-in"/)
  t.match(raw, /"user":"dana"/)
})

/** No session: no keygate_session cookie set, a message for the console, and no session record in Redis. */
async function noSession (t: Test, w: SsoWorld, done: Awaited<ReturnType<typeof sendCallback>>, message: RegExp): Promise<void> {
  t.equal(done.status, 303)
  t.equal(done.session, undefined, 'no session cookie')
  t.ok(done.location?.startsWith(`${w.adminUrl}/console/#sso_error=`), 'back to the console\'s sign-in page')
  t.match(ssoError(done.location), message)
  t.same(await w.gw.client.keys(`${w.gw.prefix}session:*`), [], 'no session in Redis')
}

t.test('the provider\'s answer, tampered with or replayed: no session', async (t) => {
  const w = await ssoWorld(t)

  await t.test('state tampered with', async (t) => {
    const walk = await walkToCallback(w.adminUrl, 'dana', { redirectUri: w.redirectUri })
    walk.callback.searchParams.set('state', 'forged-' + (walk.callback.searchParams.get('state') ?? ''))
    await noSession(t, w, await sendCallback(walk.callback, walk.loginCookie), /did not succeed/)
  })

  await t.test('no login cookie (a callback sent from elsewhere)', async (t) => {
    const walk = await walkToCallback(w.adminUrl, 'dana', { redirectUri: w.redirectUri })
    await noSession(t, w, await sendCallback(walk.callback, undefined), /expired or was already used/)
  })

  await t.test('the same callback twice: the second (the code reused) begins no session', async (t) => {
    const walk = await walkToCallback(w.adminUrl, 'dana', { redirectUri: w.redirectUri })
    const first = await sendCallback(walk.callback, walk.loginCookie)
    t.ok(first.session !== undefined, 'the first one signs in')
    await w.gw.client.del(...await w.gw.client.keys(`${w.gw.prefix}session:*`))
    await noSession(t, w, await sendCallback(walk.callback, walk.loginCookie), /expired or was already used/)
  })

  await t.test('the code redeemed with another PKCE verifier: the provider refuses it', async (t) => {
    const walk = await walkToCallback(w.adminUrl, 'dana', { redirectUri: w.redirectUri })
    const id = walk.loginCookie.slice('keygate_sso_login='.length)
    const name = `${w.gw.prefix}sso-login:${createHash('sha256').update(id).digest('hex')}`
    const pending = JSON.parse(await w.gw.client.get(name) as string) as { verifier: string }
    pending.verifier = 'x'.repeat(43) + pending.verifier.slice(43)
    await w.gw.client.set(name, JSON.stringify(pending), 'PX', 60_000)
    await noSession(t, w, await sendCallback(walk.callback, walk.loginCookie), /did not succeed/)
  })

  t.notMatch(w.gw.rawLogs.join('\n'), /code=|"state"|nonce|keygate_session=/, 'no code, state or session id in a log line')
})

t.test('ID tokens that must not be believed: no session', async (t) => {
  const hostile = await startHostileProvider(t, { clientId: CLIENT_ID, sub: 'dana' })
  const w = await ssoWorld(t, { issuer: hostile.issuer })

  hostile.mode = 'honest'
  const honest = await walkWithoutLogin(w.adminUrl)
  const ok = await sendCallback(honest.callback, honest.loginCookie)
  t.ok(ok.session !== undefined, 'the same provider telling the truth: signed in (so each refusal below is the lie\'s)')
  await w.gw.client.del(...await w.gw.client.keys(`${w.gw.prefix}session:*`))

  const lies: HostileMode[] = ['other-key', 'expired', 'wrong-audience', 'nonce-replayed']
  for (const mode of lies) {
    await t.test(mode, async (t) => {
      hostile.mode = mode
      const walk = await walkWithoutLogin(w.adminUrl)
      await noSession(t, w, await sendCallback(walk.callback, walk.loginCookie), /did not succeed/)
    })
  }
})

t.test('who that is: no user, a deactivated user, an unverified email: refused, nothing created', async (t) => {
  const w = await ssoWorld(t)
  await noSession(t, w, await signIn(w, 'mallory'), /no keygate user matches the subject "mallory"/)
  t.equal(await w.gw.client.exists(`${w.gw.prefix}user:mallory`), 0, 'nothing created')
  // a login the provider lists no claims for: keygate's own refusal, not the provider's error page
  await noSession(t, w, await signIn(w, 'nobody-listed'), /no keygate user matches the subject "nobody-listed"/)

  await w.gw.fixtures.hset(`${w.gw.prefix}user:erin`, 'status', 'deactivated')
  await noSession(t, w, await signIn(w, 'erin'), /the keygate user matching the subject "erin" is deactivated/)
})

t.test('match: email: the verified email, in any case; an unverified one is refused', async (t) => {
  const w = await ssoWorld(t, { match: 'email' })
  const dana = await signIn(w, 'dana')
  t.ok(dana.session !== undefined, 'Dana@Example.com, verified, matches the user dana (dana@example.com)')
  const me = await adminCall(w.gw, 'GET', '/admin/v1/session', undefined, undefined, withSession(dana.session as string))
  t.match(JSON.parse(me.body), { principal: { kind: 'session', user: 'dana' } })
  await w.gw.client.del(...await w.gw.client.keys(`${w.gw.prefix}session:*`))
  await noSession(t, w, await signIn(w, 'erin'), /does not report the email "erin@example.com" as verified/)
})

t.test('create_users: a person without a user gets one, audited as sso:<issuer>', async (t) => {
  const w = await ssoWorld(t, { createUsers: '    create_users: { org: acme, role: self-service }' })
  const done = await signIn(w, 'mallory')
  t.ok(done.session !== undefined, 'signed in')
  t.match(await w.gw.client.hgetall(`${w.gw.prefix}user:mallory`), { org: 'acme', role: 'self-service', status: 'active', email: 'mallory@example.com' })
  const audit = await w.gw.client.xrange(`${w.gw.prefix}audit`, '-', '+')
  const entry = audit.map(([, f]) => f.join(' ')).find((f) => f.includes('user:mallory'))
  t.match(entry, new RegExp(`actor sso:${w.issuer.replace(/[.]/g, '\\.')} action user.create target user:mallory`))
})

t.test('sessions: every instance honours one, sign-out on one ends it on the other, CSRF header required', async (t) => {
  const w = await ssoWorld(t)
  const other = await startGateway(t, { redis: w.gw.redis, prefix: w.gw.prefix, seed: false })
  const session = (await signIn(w, 'dana')).session as string
  const me = (gw: TestGateway): Promise<number> => adminCall(gw, 'GET', '/admin/v1/session', undefined, undefined, withSession(session)).then((r) => r.status)
  t.equal(await me(w.gw), 200)
  t.equal(await me(other), 200, 'the other instance (no sso.oidc of its own) honours it')

  // CSRF: a state-changing call with a session needs X-Requested-With: keygate
  const forged = await adminCall(other, 'POST', '/admin/v1/keys', undefined, { type: 'personal' }, withSession(session))
  t.equal(forged.status, 403)
  t.equal((await other.logOf(forged))?.reason, 'csrf_header_missing')
  const wrong = await adminCall(other, 'POST', '/admin/v1/keys', undefined, { type: 'personal' }, withSession(session, { 'X-Requested-With': 'XMLHttpRequest' }))
  t.equal(wrong.status, 403)
  t.equal((await w.gw.client.smembers(`${w.gw.prefix}user-keys:dana`)).length, 0, 'nothing created by either')

  // a Bearer credential wins over the cookie (the cookie is not even read)
  const bearer = await adminCall(other, 'GET', '/admin/v1/session', 'kg_not-a-key', undefined, withSession(session))
  t.equal(bearer.status, 401)

  // sign-out on the other instance ends it on the first too
  const out = await adminCall(other, 'DELETE', '/admin/v1/session', undefined, undefined, withSession(session, { 'X-Requested-With': 'keygate' }))
  t.equal(out.status, 204)
  t.match(out.headers['set-cookie'], /^keygate_session=; Max-Age=0; Path=\/; HttpOnly; SameSite=Strict/)
  t.equal(await me(w.gw), 401)
  t.equal((await w.gw.logOf(await adminCall(w.gw, 'GET', '/admin/v1/session', undefined, undefined, withSession(session))))?.reason, 'unknown_session')
  t.equal(await me(other), 401)
})

t.test('the user deactivated or moved: the session is refused at once, and deactivation ends it', async (t) => {
  const w = await ssoWorld(t)
  const other = await startGateway(t, { redis: w.gw.redis, prefix: w.gw.prefix, seed: false })
  const me = (gw: TestGateway, session: string): Promise<number> => adminCall(gw, 'GET', '/admin/v1/session', undefined, undefined, withSession(session)).then((r) => r.status)

  // deactivated through the admin API: refused within 1 s on both instances, and the session deleted
  const s1 = (await signIn(w, 'dana')).session as string
  t.equal(await me(other, s1), 200, 'cached on the other instance')
  const off = await adminCall(w.gw, 'POST', '/admin/v1/users/dana/deactivate', ADMIN_TOKEN, {})
  t.equal(off.status, 200, off.body)
  t.not(await eventually(async () => await me(other, s1) === 401 && await me(w.gw, s1) === 401, 1000), -1, 'refused within 1 s on every instance')
  t.same(await w.gw.client.keys(`${w.gw.prefix}session:*`), [], 'the session is gone from Redis')
  t.equal(await w.gw.client.exists(`${w.gw.prefix}user-sessions:dana`), 0)
  await adminCall(w.gw, 'POST', '/admin/v1/users/dana/activate', ADMIN_TOKEN, {})
  t.equal(await me(w.gw, s1), 401, 'activating again does not bring the session back')

  // deactivated by hand (redis-cli): the per-request re-check through the cache refuses it
  const s2 = (await signIn(w, 'dana')).session as string
  t.equal(await me(other, s2), 200)
  await w.gw.fixtures.hset(`${w.gw.prefix}user:dana`, 'status', 'deactivated')
  t.not(await eventually(async () => await me(other, s2) === 401, 1000), -1, 'refused within 1 s')
  t.equal((await other.logOf(await adminCall(other, 'GET', '/admin/v1/session', undefined, undefined, withSession(s2))))?.reason, 'user_deactivated')
  await w.gw.fixtures.hset(`${w.gw.prefix}user:dana`, 'status', 'active')

  // moved to another org: refused
  const s3 = (await signIn(w, 'dana')).session as string
  t.equal(await me(other, s3), 200)
  await w.gw.fixtures.hset(`${w.gw.prefix}user:dana`, 'org', 'globex')
  t.not(await eventually(async () => await me(other, s3) === 401, 1000), -1, 'moved to another org: refused within 1 s')
  t.equal((await other.logOf(await adminCall(other, 'GET', '/admin/v1/session', undefined, undefined, withSession(s3))))?.reason, 'org_mismatch')
})

t.test('cookie attributes on the raw Set-Cookie with an https redirect_uri: Secure, __Host-', async (t) => {
  // (the provider needs no TLS here: the cookie's attributes follow the configured redirect_uri alone)
  const gw = await startGateway(t, {
    yaml: `
sso:
  oidc: { issuer: "http://127.0.0.1:9", client_id: k, redirect_uri: "https://keygate-admin.example.com/console/sso/callback" }`
  })
  const { createSso, sessionCookie, loginCookie } = await import('../../../src/admin/sso/index.js')
  const sso = await createSso(gw.config, gw.client as never)
  t.match(sessionCookie(sso, 'x'.repeat(43)), /^__Host-keygate_session=x{43}; Max-Age=28800; Path=\/; HttpOnly; Secure; SameSite=Strict$/)
  t.match(loginCookie(sso, 'y'.repeat(43)), /^__Host-keygate_sso_login=y{43}; Max-Age=600; Path=\/; HttpOnly; Secure; SameSite=Lax$/)
  // the provider unreachable: the console gets a message, no session
  const res = await fetch(`http://127.0.0.1:${gw.adminPort}/console/sso/login`, { redirect: 'manual' })
  t.equal(res.status, 303)
  t.match(res.headers.get('location'), /#sso_error=provider_unreachable$/)
  t.same(res.headers.getSetCookie().filter((c) => c.includes('keygate_session=')), [])
})

t.test('sign-ins begun from one address are limited (each keeps a record in Redis for a while)', async (t) => {
  const w = await ssoWorld(t)
  const { LOGIN_STARTS_PER_MINUTE } = await import('../../../src/admin/sso/routes.js')
  const start = async (): Promise<Response> => await fetch(`${w.adminUrl}/console/sso/login`, { redirect: 'manual' })
  for (let i = 0; i < LOGIN_STARTS_PER_MINUTE; i++) await (await start()).arrayBuffer()
  t.equal((await w.gw.client.keys(`${w.gw.prefix}sso-login:*`)).length, LOGIN_STARTS_PER_MINUTE, 'one record per sign-in begun')
  const over = await start()
  t.equal(over.status, 303)
  t.match(ssoError(over.headers.get('location')), /too many sign-ins from this address; try again in \d+ s/)
  t.equal((await w.gw.client.keys(`${w.gw.prefix}sso-login:*`)).length, LOGIN_STARTS_PER_MINUTE, 'no record for a refused start')
})
