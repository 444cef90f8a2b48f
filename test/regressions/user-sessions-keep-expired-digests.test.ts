/**
 * Security review, finding 6: `user-sessions:<user>` kept the digest of every session
 * the user ever began, expired ones included, for as long as the user signed in again
 * within the session TTL: a set that only grew.
 *
 * Each sign-in drops the digests whose session has expired, so the set holds the live
 * sessions only (and those begun since).
 */
import { createHash } from 'node:crypto'
import t from 'tap'
import { redisKeys } from '../../src/registry/redis-keys.js'
import { SessionStore } from '../../src/admin/sso/sessions.js'
import { startGateway } from '../helpers/gateway.js'

t.test('a sign-in drops the digests of the user\'s expired sessions', async (t) => {
  const gw = await startGateway(t, { seed: false })
  const keys = redisKeys(gw.prefix)
  const sessions = new SessionStore(gw.client, keys, 3_600_000)
  const first = await sessions.begin('dana', 'acme', Date.now())
  for (let i = 0; i < 5; i++) await sessions.begin('dana', 'acme', Date.now())
  const digests = await gw.client.smembers(keys.userSessions('dana'))
  t.equal(digests.length, 6, 'six sessions begun')
  // five of them end as their TTL ends them (the set itself lives on: each sign-in renews it)
  const firstDigest = createHash('sha256').update(first).digest('hex')
  const ended = digests.filter((d) => d !== firstDigest)
  await gw.client.del(...ended.map((d) => keys.session(d)))

  const id = await sessions.begin('dana', 'acme', Date.now())
  t.equal(await gw.client.scard(keys.userSessions('dana')), 2, 'only the live sessions\' digests are left')
  for (const d of ended) t.notOk(await gw.client.sismember(keys.userSessions('dana'), d), 'an expired one is gone')
  t.match(await sessions.get(first), { user: 'dana', org: 'acme' }, 'a live session is kept')
  t.match(await sessions.get(id), { user: 'dana', org: 'acme' }, 'and the new one')
})
