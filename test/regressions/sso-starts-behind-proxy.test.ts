/**
 * Security review, finding 5: SSO sign-in starts were limited per TCP peer only. Behind
 * the TLS proxy any real SSO needs, every browser shares the proxy's address, so 120
 * unauthenticated requests a minute locked everyone out; and past 10,000 peers the
 * limiter forgot a blocked one (test/unit/admin/api/sign-in-limit.test.ts).
 *
 * Starts are limited per client address as the trusted proxy reports it
 * (`trusted_proxies`, as on the data plane), and bounded per instance in all.
 */
import t from 'tap'
import { LOGIN_STARTS_PER_MINUTE } from '../../src/admin/sso/routes.js'
import { ssoError, ssoWorld } from '../helpers/oidc-provider.js'

t.test('behind a trusted proxy, one client\'s starts do not lock the others out', async (t) => {
  const w = await ssoWorld(t, { yaml: 'trusted_proxies: ["127.0.0.1"]' })
  const start = async (client: string): Promise<Response> =>
    await fetch(`${w.adminUrl}/console/sso/login`, { redirect: 'manual', headers: { 'X-Forwarded-For': client } })
  for (let i = 0; i < LOGIN_STARTS_PER_MINUTE; i++) await (await start('10.0.0.1')).arrayBuffer()
  const over = await start('10.0.0.1')
  t.match(ssoError(over.headers.get('location')), /too many sign-ins from this address/, 'that client: limited')
  const other = await start('10.0.0.2')
  t.equal(other.status, 303)
  t.equal(ssoError(other.headers.get('location')), undefined, 'another client behind the same proxy: begins')
  t.ok(other.headers.get('location')?.startsWith('http://'), 'sent to the provider')
})
