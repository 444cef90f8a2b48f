/**
 * What a test of a real `keygate serve` process needs before it starts one: its own
 * redis-server, an upstream, and the standard world (orgs, roles, users) under a
 * prefix of its own, all stopped when the test ends.
 */
import type { Test } from 'tap'
import { Redis } from 'ioredis'
import { Fixtures } from './fixtures.js'
import { startRedis, uniquePrefix, type TestRedis } from './redis.js'
import { startUpstream, type Upstream } from './upstream.js'

export interface World { redis: TestRedis, upstream: Upstream, client: Redis, prefix: string, fixtures: Fixtures }

export async function standardWorld (t: Test): Promise<World> {
  const redis = await startRedis()
  t.teardown(() => redis.stop())
  const upstream = await startUpstream()
  t.teardown(() => upstream.close())
  const prefix = uniquePrefix()
  const client = new Redis(redis.url)
  t.teardown(() => { client.disconnect() })
  const fixtures = new Fixtures(client, prefix)
  await fixtures.standardWorld()
  return { redis, upstream, client, prefix, fixtures }
}
