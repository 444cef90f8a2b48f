/**
 * The fill budget (`cache.fills_per_second`, `cache.fill_wait_ms`): a miss waits its
 * turn for a Redis read; one that could not get it in time is refused at once with the
 * catalogue's 503 (reason `registry_busy`), without a Redis command; concurrent misses
 * of one key share one read and one token.
 */
import t from 'tap'
import { errorBody } from '../../../src/errors.js'
import { startGateway } from '../../helpers/gateway.js'
import type { RawResponse } from '../../helpers/raw-http.js'
import { scriptCalls } from '../../helpers/redis.js'

t.test('one read a second, a miss waits at most 1.5 s', async (t) => {
  // (usage counting and the request log off: their writes are script calls too, and this counts the registry's reads)
  const gw = await startGateway(t, {
    yaml: 'cache: { fills_per_second: 1, fill_wait_ms: 1500, warm_up: false }\nusage: { enabled: false }\nrequest_log: { enabled: false }\n'
  })
  const [k1, k2, k3] = [await gw.fixtures.personalKey('alice'), await gw.fixtures.personalKey('alice'), await gw.fixtures.personalKey('alice')]
  await new Promise((resolve) => setTimeout(resolve, 1100)) // the bucket holds its one token

  const before = await scriptCalls(gw.client)
  const first = await gw.get('/api/v1/users', k1?.key)
  t.equal(first.status, 200, 'the first miss takes the token at once')

  // k2: five concurrent misses, one turn in the queue (about 1 s); k3 would be 2 s away
  const k2s = Array.from({ length: 5 }, async () => await gw.get('/api/v1/users', k2?.key))
  await new Promise((resolve) => setTimeout(resolve, 50))
  const sentAt = performance.now()
  const refused = await gw.get('/api/v1/users', k3?.key)
  const refusedInMs = performance.now() - sentAt
  t.equal(refused.status, 503, 'a miss that could not be read within fill_wait_ms is refused')
  t.equal(refused.body, errorBody('service_unavailable'), 'with the catalogue\'s 503 body')
  t.notOk(refused.headers['www-authenticate'], 'and no challenge')
  t.equal((await gw.logOf(refused))?.reason, 'registry_busy', 'logged as registry_busy')
  t.ok(refusedInMs < 500, `at once, without waiting (${refusedInMs.toFixed(0)} ms)`)

  const waited: RawResponse[] = await Promise.all(k2s)
  t.same(waited.map((r) => r.status), [200, 200, 200, 200, 200], 'the misses that fit in the queue are served when their turn comes')
  t.equal(await scriptCalls(gw.client) - before, 2, 'two reads: k1, and one for the five k2 misses; none for the refused one')

  await new Promise((resolve) => setTimeout(resolve, 1100))
  t.equal((await gw.get('/api/v1/users', k3?.key)).status, 200, 'the refused key is served once the budget allows')
})
