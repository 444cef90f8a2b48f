/**
 * A graceful stop (app.close()) stops the gateway's background parts in the reverse of
 * the order they were added (src/lifecycle.ts): the listeners first, the registry
 * connection last, each drained before the next stops. The proof that a stop drains:
 * a count made in the same tick as the stop begins (no timer's flush can come between)
 * is in Redis once it ends, with the counts of the requests before it and the key's
 * last-used time.
 */
import t from 'tap'
import { startGateway } from '../../helpers/gateway.js'
import { DAY_MS } from '../../../src/usage/counter.js'

t.test('a stop drains every part, last added first', async (t) => {
  const gw = await startGateway(t, { yaml: 'usage: { flush_ms: 5000 }' })
  t.same(gw.app.lifecycle.stopOrder, [
    'listeners', 'public leak reports', 'upstreams', 'span export', 'webhook events', 'webhooks', 'webhooks connection',
    'shadow refusals', 'last used', 'request log', 'usage counts', 'usage connection', 'outage log', 'refill', 'push invalidation',
    'registry connection'
  ])
  const alice = await gw.fixtures.personalKey('alice')
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 200)
  t.equal((await gw.get('/api/v1/users', alice.key)).status, 200)
  t.equal((await gw.send('POST', '/api/v1/users', [['Authorization', `Bearer ${alice.key}`]])).status, 403)

  const day = Math.floor(Date.now() / DAY_MS)
  const hours = [gw.fixtures.keys.usageHours(alice.id, day - 1), gw.fixtures.keys.usageHours(alice.id, day)]
  const counted = async (): Promise<number> => {
    let n = 0
    for (const name of hours) for (const v of Object.values(await gw.client.hgetall(name))) n += Number(v)
    return n
  }
  // the last response's count, then the stop, in one tick
  gw.app.counter.count(alice.id, 'acme', 200, 'allowed', Date.now())
  t.ok(gw.app.counter.held >= 1, 'a count is held in memory')
  await gw.app.close()
  t.equal(await counted(), 4, 'the stop wrote the last counts')
  t.equal(gw.app.counter.held, 0)
  t.ok(await gw.client.hget(gw.fixtures.keys.usage, alice.id), 'and the key\'s last use')
  t.equal(gw.app.redis.status, 'end', 'the registry connection closed last')
  await gw.app.close()
})
