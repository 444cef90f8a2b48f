/**
 * Security review, finding 7 (decided): tokens in no keygate format (another vendor's
 * token, an imported key) count toward the admin token's limit of failed sign-ins, not
 * the keys' limit.
 *
 * The admin token has no format of its own, so any credential that is not shaped like a
 * keygate key could be a guess at it. Counting such tokens apart would let the right
 * admin token through once wrong guesses had spent their limit: a right guess would then
 * look different from a wrong one. The cost, documented in docs/security.md: a client
 * sending foreign tokens from an admin's address can keep the admin token out of that
 * address for up to a minute; keys and sessions still sign in there.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../helpers/gateway.js'

const TOKEN = 'foreign-admin-token-0123456789abcdef'

t.test('foreign-format tokens are counted as guesses at the admin token', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const f = gw.fixtures
  await f.role('boss', ['keygate:admin'])
  await f.user('root', 'acme', 'boss')
  const adminKey = (await f.personalKey('root')).key
  const foreign = [
    'ghp_' + 'x'.repeat(36), 'xoxb-123-456-abcdef', 'sk_live_' + 'y'.repeat(24), 'AKIA' + 'Z'.repeat(16), 'legacy-1234'
  ]
  for (let i = 0; i < 10; i++) {
    const token = foreign[i % foreign.length] as string
    t.equal((await call(gw, 'GET', '/admin/v1/session', `${token}${i}`)).status, 401, `a foreign token ${i + 1}: 401`)
  }
  t.equal((await call(gw, 'GET', '/admin/v1/session', TOKEN)).status, 429,
    'the admin token from that peer: 429, exactly as after ten wrong guesses at it')
  t.equal((await call(gw, 'GET', '/admin/v1/session', adminKey)).status, 200, 'a key still signs in from it')
})
