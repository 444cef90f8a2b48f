/**
 * Security review, finding 2: with SSO `match: email`, an org admin signed in as a
 * colleague. It moved its own email away, wrote its IdP email into the colleague's
 * record, signed in, and got a session as the colleague (whose personal key the direct
 * route refuses it), and the audit named the colleague. It could also block anyone's SSO
 * sign-in, a global admin's included, by copying their email into a user of its org.
 *
 * Only `keygate:admin` sets another user's email; a sign-in email belongs to one user
 * (refused on conflict, 409); the audit records each SSO sign-in with the claim that
 * matched.
 */
import t from 'tap'
import { adminCall as call } from '../helpers/gateway.js'
import { ADMIN_TOKEN, signIn, ssoWorld } from '../helpers/oidc-provider.js'

t.test('match: email: no org admin writes a colleague\'s email; an email is one user\'s', async (t) => {
  const w = await ssoWorld(t, { match: 'email' })
  const f = w.gw.fixtures
  await f.role('orgadmin', ['keygate:org:admin', 'keygate:keys:self', 'users:*'])
  await f.user('oscar', 'acme', 'orgadmin')
  await f.admin.putUser('oscar', { org: 'acme', role: 'orgadmin', email: 'oscar@example.com' })
  const oscar = (await f.personalKey('oscar')).key

  const put = (id: string, email: string, credential = oscar): ReturnType<typeof call> =>
    call(w.gw, 'PUT', `/admin/v1/users/${id}`, credential, { org: 'acme', role: 'self-service', email })
  const mallorys = 'mallory@example.com'
  const written = await put('dana', mallorys)
  t.equal(written.status, 403, 'an org admin writes no colleague\'s email')
  t.equal(await w.gw.client.hget(`${w.gw.prefix}user:dana`, 'email'), 'dana@example.com', 'unchanged')
  const created = await put('newbie', mallorys)
  t.equal(created.status, 403, 'nor a new user\'s')
  const own = await call(w.gw, 'PUT', '/admin/v1/users/oscar', oscar, { org: 'acme', role: 'orgadmin', email: 'o@example.com' })
  t.equal(own.status, 200, 'its own email: its to set')

  const taken = await put('erin', 'DANA@example.com', ADMIN_TOKEN)
  t.equal(taken.status, 409, 'another user\'s sign-in email, in any case: refused even to an admin')
  t.equal(await w.gw.client.hget(`${w.gw.prefix}user:erin`, 'email'), 'erin@example.com')
  const copy = await call(w.gw, 'PUT', '/admin/v1/users/oscar', oscar, { org: 'acme', role: 'orgadmin', email: 'dana@example.com' })
  t.equal(copy.status, 409, 'an org admin copies no one\'s email into its own record (no blocking a sign-in)')
  t.equal((await put('erin', 'erin2@example.com', ADMIN_TOKEN)).status, 200, 'an admin sets another user\'s email')

  const done = await signIn(w, 'dana')
  t.ok(done.session !== undefined, 'dana signs in as dana')
  const audit = (await call(w.gw, 'GET', '/admin/v1/audit?since=1h', ADMIN_TOKEN)).json() as {
    entries: Array<{ action: string, target: string, detail?: string }>
  }
  const entry = audit.entries.find((e) => e.action === 'session.begin')
  t.match(entry, { target: 'user:dana', actor: /^sso:/ }, 'the audit records the sign-in')
  t.same(JSON.parse(entry?.detail ?? '{}'), { claim: 'email', email: 'Dana@Example.com' }, 'by which claim')
})
