/**
 * Where push invalidation listens, per topology (docs/topologies.md):
 *   standalone  a second connection to the same server;
 *   Sentinel    a second Sentinel-managed connection: it asks the sentinels for
 *               the current master each time it is opened, so after a failover the
 *               tracker's reopen lands on the new master (and the cache is flushed);
 *   Cluster     a connection to the master that owns the registry's hash slot (the
 *               prefix's hash tag puts every record in one slot). When a topology
 *               refresh shows the slot on another node, the tracker moves there.
 * Every connection is made without automatic reconnection: the tracker reopens
 * through this factory, so it always asks where to go.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis'
import { duplicateClient, type RegistryClient } from '../registry/redis-client.js'

const OWN: Partial<RedisOptions> = {
  connectionName: 'keygate-invalidation',
  autoResubscribe: false,
  // the tracker reopens through the factory instead
  retryStrategy: () => null,
  // setup commands run on 'ready'; nothing is ever queued before it
  enableOfflineQueue: true,
  maxRetriesPerRequest: 0
}

export interface TrackingConnections {
  connect: () => Promise<Redis>
  /** calls `moved` when the registry's slot is on another node than `current()` (Cluster only) */
  watch: (current: () => string | undefined, moved: () => void) => void
}

/** `slotKey`: any registry key (they all hash to one slot on a Cluster). */
export function trackingConnections (client: RegistryClient, slotKey: string): TrackingConnections {
  if (!(client instanceof Cluster)) {
    return { connect: async () => duplicateClient(client, OWN) as Redis, watch: () => {} }
  }
  let slot: number | undefined
  const owner = async (): Promise<{ host: string, port: number }> => {
    slot ??= Number(await client.call('CLUSTER', 'KEYSLOT', slotKey))
    const nodeKey = client.slots[slot]?.[0]
    if (nodeKey === undefined) throw new Error('the cluster has not said which node holds the registry slot yet')
    const i = nodeKey.lastIndexOf(':')
    return { host: nodeKey.slice(0, i), port: Number(nodeKey.slice(i + 1)) }
  }
  return {
    async connect () {
      const { host, port } = await owner()
      return new Redis({ ...client.options.redisOptions, ...OWN, host, port })
    },
    watch (current, moved) {
      client.on('refresh', () => {
        if (slot === undefined) return
        const nodeKey = client.slots[slot]?.[0]
        const on = current()
        if (nodeKey !== undefined && on !== undefined && nodeKey !== on) moved()
      })
    }
  }
}
