/**
 * Quotas on a real Redis Cluster (three masters, `redis+cluster://`; docs/quotas.md
 * "Redis Cluster"): the meter script touches a key's meter and record and its org's
 * meter and record in one call, so all four must hash to one slot: the registry's, by
 * the prefix's hash tag. Two registries with different tags, served by different
 * masters, each hammered concurrently through three gateways: each allows exactly its
 * quota, and every meter is in its registry's slot.
 */
import t, { type Test } from 'tap'
import { hashTag } from '../../../src/config/redis-url.js'
import { isCluster, type RegistryClient } from '../../../src/registry/redis-client.js'
import { redisKeys } from '../../../src/registry/redis-keys.js'
import { Fixtures } from '../../helpers/fixtures.js'
import { startGateway, type TestGateway } from '../../helpers/gateway.js'
import type { RawResponse } from '../../helpers/raw-http.js'
import { startRedisCluster, type TestCluster } from '../../helpers/redis-cluster.js'
import { asTestRedis } from '../../helpers/redis-node.js'
import { uniquePrefix } from '../../helpers/redis.js'
import { withClient } from '../../helpers/redis-sentinel.js'
import { cliClient, redisSection } from '../../helpers/topology.js'

t.setTimeout(300_000)

const RULES = `
rules:
  - { method: GET, path: /api/v1/users, permissions: [users:read] }
  - { method: GET, path: /api/v1/orgs/:org/*, permissions: [], cost: 3 }
`

interface Registry { prefix: string, gws: TestGateway[], fx: Fixtures }

const tagged = (): string => `{${uniquePrefix().slice(0, -1).replace(/:/g, '-')}}:`

async function registry (t: Test, cluster: TestCluster, prefix: string): Promise<Registry> {
  const [first] = cluster.nodes
  const gws: TestGateway[] = []
  for (let i = 0; i < 3; i++) {
    gws.push(await startGateway(t, {
      redis: asTestRedis(first as NonNullable<typeof first>), // (the helper's own plain client; unused here)
      prefix,
      seed: false,
      yaml: RULES,
      configure: (c) => { c.redis = redisSection(cluster.url, prefix) }
    }))
  }
  const fx = new Fixtures(cliClient(t, gws[0] as TestGateway), prefix, (gws[0] as TestGateway).config.keys.prefix)
  await fx.standardWorld()
  return { prefix, gws, fx }
}

async function storm (gws: TestGateway[], n: number, path: string, key: string): Promise<RawResponse[]> {
  return await Promise.all(Array.from({ length: n }, async (_, i) => await (gws[i % gws.length] as TestGateway).get(path, key)))
}
const allowedOf = (list: RawResponse[]): number => list.filter((r) => r.status === 200).length
const exceededOf = (list: RawResponse[]): number =>
  list.filter((r) => r.status === 429 && (r.json() as { error: { code: string } }).error.code === 'quota_exceeded').length

t.test('on a 3-master Cluster, two registries on two masters each allow exactly their quota', async (t) => {
  const cluster = await startRedisCluster(t, { masters: 3 })
  // two tags whose slots different masters serve
  const a = tagged()
  let b = tagged()
  const masterA = (await cluster.masterOf(`${a}key:x`)).port
  for (let i = 0; i < 50 && (await cluster.masterOf(`${b}key:x`)).port === masterA; i++) b = tagged()
  t.not((await cluster.masterOf(`${b}key:x`)).port, masterA, 'the two registries live on different masters')

  const regs = [await registry(t, cluster, a), await registry(t, cluster, b)]
  t.ok(isCluster((regs[0] as Registry).gws[0]?.app.redis as RegistryClient), 'the gateways hold an ioredis Cluster')

  const keys = await Promise.all(regs.map(async (r, i) => {
    const bot = await r.fx.botKey('reader', 'acme')
    const k = redisKeys(r.prefix)
    // the key: a quota of 20 a month; its org: 1,000 credits (both rows in every script call)
    await r.fx.hset(k.key(bot.id), 'quota', '20/month')
    await r.fx.hset(k.org('acme'), 'credits', String(1000 + i))
    return bot
  }))
  // every instance holds the key's records before the storm
  for (const [i, r] of regs.entries()) {
    for (const gw of r.gws) t.equal((await gw.get('/api/v1/orgs/acme/x', keys[i]?.key)).status, 200, 'warm, cost 3')
  }

  // 2 x 60 concurrent requests, both registries at once, over their 3 instances each
  const rounds = await Promise.all(regs.map(async (r, i) => await storm(r.gws, 60, '/api/v1/users', keys[i]?.key as string)))
  for (const [i, round] of rounds.entries()) {
    const r = regs[i] as Registry
    const k = redisKeys(r.prefix)
    const id = keys[i]?.id as string
    t.equal(allowedOf(round), 11, `registry ${i + 1}: exactly the 11 units left of 20 (the 3 warm requests cost 3 each)`)
    t.equal(exceededOf(round), 60 - allowedOf(round), 'the rest: 429 quota_exceeded')
    const client = r.gws[0]?.app.redis as unknown as { hget: (k: string, f: string) => Promise<string | null> }
    t.equal(await client.hget(k.meter('key', id), 'used'), '20', 'the key\'s meter holds 20')
    t.equal(await client.hget(k.meter('org', 'acme'), 'spent'), String(9 + 11), 'the org\'s credits spent alongside')
    // the script's four keys, in the registry's slot
    const slot = async (key: string): Promise<number> =>
      await withClient((cluster.nodes[0] as { port: number }).port, async (c) => Number(await c.call('CLUSTER', 'KEYSLOT', key)))
    const want = await slot(k.key(id))
    t.same(
      await Promise.all([k.meter('key', id), k.meter('org', 'acme'), k.org('acme')].map(slot)),
      [want, want, want],
      `the meters and records hash to one slot (the tag ${hashTag(r.prefix) ?? ''})`
    )
  }
})
