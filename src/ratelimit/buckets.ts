/**
 * The names of the buckets (Redis hashes, script.ts) and their current use, for the
 * limiter and for the admin views. Under the registry's prefix, so on a Cluster they
 * share its hash slot; the period is part of the name (a changed count keeps the
 * bucket, a changed period starts another).
 *
 *   <prefix>ratelimit:key:<keyId>:<period ms>           the key's own limit, or the default
 *   <prefix>ratelimit:role:<role>:<keyId>:<period ms>   the role's limit, for one key
 *   <prefix>ratelimit:org:<org>:<period ms>             the org's limit, shared
 *   <prefix>ratelimit:identity:<id>:<period ms>         an identity's limit, shared by its keys
 */
import type { RegistryClient } from '../registry/redis-client.js'
import type { RateLimit } from '../config/rate-limit.js'
import { counted, countsOf } from './window.js'

export interface BucketNames {
  key: (keyId: string, limit: RateLimit) => string
  role: (role: string, keyId: string, limit: RateLimit) => string
  org: (org: string, limit: RateLimit) => string
  identity: (id: string, limit: RateLimit) => string
}

/** `base`: the buckets' prefix (`keygate:ratelimit:`, redis-keys.ts) */
export function bucketNames (base: string): BucketNames {
  return {
    key: (keyId, limit) => `${base}key:${keyId}:${limit.periodMs}`,
    role: (role, keyId, limit) => `${base}role:${role}:${keyId}:${limit.periodMs}`,
    org: (org, limit) => `${base}org:${org}:${limit.periodMs}`,
    identity: (id, limit) => `${base}identity:${id}:${limit.periodMs}`
  }
}

/**
 * Requests the bucket counts in the window now (by this process's clock, which is
 * close enough to Redis's for a view): what the admin views show as a limit's use.
 */
export async function bucketUse (
  redis: RegistryClient, name: string, limit: RateLimit, now = Date.now()
): Promise<number> {
  return counted(countsOf(await redis.hgetall(name), limit), limit, now)
}
