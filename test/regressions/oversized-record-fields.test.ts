// A record edited by hand with an identity field no admin front end would write (an
// `org`, `user` or `role` of 20,000 characters, or with a control character) became
// a 502: the identity header it makes was too large for the upstream (or for a proxy
// in front of the authorizer). Such a record is a bad record: it denies with the
// uniform 401 (reason `invalid_record`), on the data plane and in the authorizer, and
// never reaches an upstream.
import t from 'tap'
import { startGateway } from '../helpers/gateway.js'

const LONG = 'a'.repeat(20_000)

t.test('an oversized or unprintable identity field in a record denies (401 invalid_record), never a 502', async (t) => {
  const gw = await startGateway(t, { yaml: 'authz_listen: "127.0.0.1:0"\n' })
  const cases: Array<[string, string, string]> = [
    ['the key\'s org', 'key', 'org'],
    ['the BOT key\'s role', 'key', 'role'],
    ['the user\'s org', 'user', 'org'],
    ['the user\'s role', 'user', 'role']
  ]
  for (const [name, record, field] of cases) {
    for (const [what, value] of [['20,000 characters', LONG], ['a tab inside', 'ac\tme']] as const) {
      const bot = field === 'role' && record === 'key'
      const k = bot ? await gw.fixtures.botKey('reader', 'acme') : await gw.fixtures.personalKey('alice')
      const redisKey = record === 'key' ? `${gw.prefix}key:${k.id}` : `${gw.prefix}user:alice`
      const before = await gw.client.hget(redisKey, field)
      await gw.client.hset(redisKey, field, value)
      const upstreamBefore = gw.upstream.requests.length
      const res = await gw.get('/api/v1/users', k.key)
      t.equal(res.status, 401, `${name}, ${what}: 401 on the data plane`)
      t.equal((await gw.logOf(res))?.reason, 'invalid_record', `${name}, ${what}: reason invalid_record`)
      t.equal(gw.upstream.requests.length, upstreamBefore, `${name}, ${what}: not forwarded`)
      const decision = await gw.authz('GET', '/_keygate', [['X-Original-Method', 'GET'], ['X-Original-URI', '/api/v1/users'], ['Authorization', `Bearer ${k.key}`]])
      t.equal(decision.status, 401, `${name}, ${what}: 401 from the authorizer`)
      if (before !== null) await gw.client.hset(redisKey, field, before)
    }
  }
})
