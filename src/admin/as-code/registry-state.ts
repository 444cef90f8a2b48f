/**
 * The registry as a registry file sees it: every role, org record and user, each with
 * the fields of fields.ts, and which roles active BOT keys act with (a role they use
 * is never pruned). Read through the index sets, never KEYS or SCAN.
 */
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import { hgetallMany } from '../store/transactions.js'
import { fileFields, type Kind } from './fields.js'

export interface RegistryState {
  records: Record<Kind, Map<string, Record<string, string>>>
  /** role -> the active BOT keys acting with it */
  botKeys: Map<string, string[]>
}

export function indexOf (keys: RedisKeys, kind: Kind): string {
  return kind === 'role' ? keys.roles : kind === 'org' ? keys.orgs : keys.users
}

export function recordKey (keys: RedisKeys, kind: Kind, name: string): string {
  return kind === 'role' ? keys.role(name) : kind === 'org' ? keys.org(name) : keys.user(name)
}

/** `beforeRead`: told every record key about to be read (apply WATCHes them first). */
export async function readState (redis: RegistryClient, keys: RedisKeys, beforeRead?: (recordKeys: string[]) => Promise<void>): Promise<RegistryState> {
  const names = {} as Record<Kind, string[]>
  for (const kind of ['role', 'org', 'user'] as const) names[kind] = (await redis.smembers(indexOf(keys, kind))).sort()
  const keyIds = await redis.smembers(keys.keys)
  const all = (['role', 'org', 'user'] as const).flatMap((kind) => names[kind].map((n) => recordKey(keys, kind, n)))
  await beforeRead?.(all)
  const hashes = await hgetallMany(redis, all)
  const records: RegistryState['records'] = { role: new Map(), org: new Map(), user: new Map() }
  let i = 0
  for (const kind of ['role', 'org', 'user'] as const) {
    for (const name of names[kind]) {
      const h = hashes[i++] ?? {}
      if (Object.keys(h).length > 0) records[kind].set(name, fileFields(kind, h))
    }
  }
  const botKeys = new Map<string, string[]>()
  if (keyIds.length > 0) {
    const pipeline = redis.pipeline()
    for (const id of keyIds) pipeline.hmget(keys.key(id), 'type', 'role', 'status')
    const replies = await pipeline.exec() ?? []
    keyIds.forEach((id, j) => {
      const [type, role, status] = (replies[j]?.[1] ?? []) as Array<string | null>
      if (type === 'bot' && status === 'active' && typeof role === 'string') botKeys.set(role, [...botKeys.get(role) ?? [], id].sort())
    })
  }
  return { records, botKeys }
}
