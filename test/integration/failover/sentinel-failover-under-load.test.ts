/**
 * Sentinel failover under load (docs/failover.md): a primary, a replica and three
 * sentinels (quorum 2, down after 1 s); two `keygate serve` instances under load with
 * live, unknown and revoked keys; the primary SIGKILLed; a key revoked and keys created
 * while the sentinels fail over. 0 wrong allows, 0 500s, a live key refused only with 503
 * and only within the documented window, the revoked key refused everywhere after it, no
 * key lost. Reduced here; full size with `npm run chaos`.
 */
import t from 'tap'
import { checkDrill, runFailoverDrill, REFUSAL_WINDOW_MS } from '../../helpers/failover-drill.js'
import { uniquePrefix } from '../../helpers/redis.js'
import { startSentinelSetup, withClient } from '../../helpers/redis-sentinel.js'

// a drill starts a topology and two gateway processes: on a loaded machine (the whole suite
// at two jobs) that alone can take a minute, past the default file timeout
t.setTimeout(300_000)

t.test('a Sentinel failover under load on two instances', async (t) => {
  const sentinel = await startSentinelSetup(t)
  const prefix = uniquePrefix()
  const primary = { host: '127.0.0.1', port: sentinel.master.port }
  const report = await runFailoverDrill(t, {
    url: sentinel.url,
    prefix,
    replicated: async () => {
      const acked = await withClient(sentinel.master.port, async (c) => {
        await c.set(`${prefix}replicated-marker`, '1')
        return await c.call('WAIT', '1', '10000')
      })
      if (acked !== 1) throw new Error('the replica did not acknowledge the writes')
    },
    killPrimary: () => { sentinel.master.kill('SIGKILL') },
    promoted: async () => { await sentinel.waitForNewMaster(primary) }
  })
  await checkDrill(t, report, REFUSAL_WINDOW_MS)
})
