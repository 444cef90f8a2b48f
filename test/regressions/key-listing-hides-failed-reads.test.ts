/**
 * A key listing never reads a failed Redis read as a missing key.
 *
 * The bug: the listing's pipelined HMGETs took an error reply (a command timeout under
 * load: a 5,000-key list ran past `redis.command_timeout_ms` and came back with 3,723
 * keys; or a record of the wrong type) as "no record", so the answer was a 200 that
 * silently left keys out, and a page skipped them for good (the cursor moved past).
 *
 * Now any failed read fails the listing (the registry's error, never a shorter list).
 * A record of the wrong type stands in for the timeout: both are error replies.
 */
import t from 'tap'
import { adminCall as call, startGateway } from '../helpers/gateway.js'

const TOKEN = 'failed-reads-admin-token-0123456789abcdef'

t.test('a failed read fails the listing, the page and the search', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })
  const ids = await gw.fixtures.bulkBotKeys('reader', 'acme', ['one', 'two', 'three'])
  const healthy = await call(gw, 'GET', '/admin/v1/keys?org=acme', TOKEN)
  t.equal((healthy.json() as { keys: unknown[] }).keys.length, 3, 'three keys while every read succeeds')

  // one record replaced by a value of another type: its HMGET answers WRONGTYPE
  await gw.client.del(gw.fixtures.keys.key(ids[1] as string))
  await gw.client.set(gw.fixtures.keys.key(ids[1] as string), 'not a hash')
  for (const query of ['org=acme', 'org=acme&limit=10', 'org=acme&limit=10&q=o']) {
    const res = await call(gw, 'GET', `/admin/v1/keys?${query}`, TOKEN)
    t.not(res.status, 200, `${query}: not a list without the key (${res.status})`)
    t.equal(res.status, 409, `${query}: the registry's error for a hand-edited record of the wrong type`)
  }
})
