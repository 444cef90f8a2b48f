/**
 * What the Sentinel and Cluster tests share: a gateway's `redis` section for a
 * topology URL, and the CLI's own client for that config.
 */
import type { Test } from 'tap'
import { parseConfig } from '../../src/config/load.js'
import type { Config } from '../../src/config/schema.js'
import { createRedis, type RegistryClient } from '../../src/registry/redis-client.js'
import type { TestGateway } from './gateway.js'

/** The `redis` section as the config loader reads it from the environment (the URL is validated there). */
export function redisSection (url: string, prefix: string): Config['redis'] {
  return parseConfig(`redis: { prefix: "${prefix}" }\n`, { KEYGATE_REDIS_URL: url }, 'test', { forServing: false }).redis
}

/** The CLI's client: the gateway's config, queueing while it connects (src/cli/context.ts). */
export function cliClient (t: Test, gw: TestGateway): RegistryClient {
  const client = createRedis(gw.config.redis, { queueWhileConnecting: true })
  client.on('error', () => {})
  t.teardown(() => { client.disconnect() })
  return client
}
