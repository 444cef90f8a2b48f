/**
 * Redis Cluster failover under load (docs/failover.md): three primaries with a replica
 * each; the registry in one slot (a hash-tagged prefix); two `keygate serve` instances
 * under load with live, unknown and revoked keys; the slot's primary SIGKILLed; a key
 * revoked and keys created while its replica takes over. 0 wrong allows, 0 500s, a live
 * key refused only with 503 and only within the documented window, the revoked key
 * refused everywhere after it, no key lost. Reduced here; full size with `npm run chaos`.
 */
import t from 'tap'
import { checkDrill, runFailoverDrill, REFUSAL_WINDOW_MS } from '../../helpers/failover-drill.js'
import { startRedisCluster, type TestCluster } from '../../helpers/redis-cluster.js'
import type { RedisNode } from '../../helpers/redis-node.js'
import { uniquePrefix } from '../../helpers/redis.js'
import { withClient } from '../../helpers/redis-sentinel.js'

// a drill starts a topology and two gateway processes: on a loaded machine (the whole suite
// at two jobs) that alone can take a minute, past the default file timeout
t.setTimeout(300_000)

t.test('a Cluster failover under load on two instances', async (t) => {
  const cluster: TestCluster = await startRedisCluster(t, { masters: 3, replicasPerMaster: 1 })
  const prefix = `{${uniquePrefix().slice(0, -1).replace(/:/g, '-')}}:`
  const slotKey = `${prefix}key:x`
  let owner: RedisNode | undefined
  const report = await runFailoverDrill(t, {
    url: cluster.url,
    prefix,
    replicated: async () => {
      owner = await cluster.masterOf(slotKey)
      const acked = await withClient(owner.port, async (c) => {
        await c.set(`${prefix}replicated-marker`, '1')
        return await c.call('WAIT', '1', '10000')
      })
      if (acked !== 1) throw new Error('the replica did not acknowledge the writes')
    },
    killPrimary: () => { owner?.kill('SIGKILL') },
    promoted: async () => { await cluster.waitForNewMaster(slotKey, owner as RedisNode) }
  })
  await checkDrill(t, report, REFUSAL_WINDOW_MS)
})
