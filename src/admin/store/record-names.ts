/**
 * The names of the records of one kind (roles, org records, users, identities) as Redis holds them:
 * every name in the kind's index set, and every record key under the namespace that a
 * SCAN finds (`<prefix>role:*`, on every primary of a Cluster), so that a record written
 * with `redis-cli` (a bare HSET, no index entry) is listed, exported and planned like
 * any other. A key found by the SCAN alone counts only when it is a hash.
 */
import { primaries, type RegistryClient } from '../../registry/redis-client.js'
import { escapeGlob, type RedisKeys } from '../../registry/redis-keys.js'
import type { Kind } from '../model/registry-fields.js'

const SCAN_COUNT = 1000

export function indexOf (keys: RedisKeys, kind: Kind): string {
  return kind === 'role' ? keys.roles : kind === 'org' ? keys.orgs : kind === 'user' ? keys.users : keys.identities
}

export function recordKey (keys: RedisKeys, kind: Kind, name: string): string {
  return kind === 'role'
    ? keys.role(name)
    : kind === 'org' ? keys.org(name) : kind === 'user' ? keys.user(name) : keys.identity(name)
}

/**
 * The kind's names, sorted: the index's and the SCAN's. `extraIndex`: another index set to read too (an org's
 * users).
 */
export async function recordNames (
  redis: RegistryClient,
  keys: RedisKeys,
  kind: Kind,
  extraIndex?: string
): Promise<string[]> {
  const indexed = new Set(await redis.smembers(indexOf(keys, kind)))
  if (extraIndex !== undefined) for (const name of await redis.smembers(extraIndex)) indexed.add(name)
  const base = recordKey(keys, kind, '')
  const scanned = (await scanKeys(redis, `${escapeGlob(base)}*`)).map((k) => k.slice(base.length))
  const unindexed = [...new Set(scanned)].filter((name) => name !== '' && !indexed.has(name))
  if (unindexed.length > 0) {
    const pipeline = redis.pipeline()
    for (const name of unindexed) pipeline.type(recordKey(keys, kind, name))
    const types = await pipeline.exec() ?? []
    unindexed.forEach((name, i) => { if (types[i]?.[1] === 'hash') indexed.add(name) })
  }
  return [...indexed].sort()
}

/** Every key matching `pattern`, on every primary of a Cluster. */
export async function scanKeys (redis: RegistryClient, pattern: string): Promise<string[]> {
  const found: string[] = []
  for (const node of primaries(redis)) {
    let cursor = '0'
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT)
      found.push(...batch)
      cursor = next
    } while (cursor !== '0')
  }
  return found
}
