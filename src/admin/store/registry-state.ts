/**
 * The registry as a registry file sees it (model/registry-fields.ts): every role, org
 * record and user, each with the fields of the file's table, and which roles active BOT
 * keys act with (a role they use is never pruned), and the fields each record holds
 * beyond the file's (what a file cannot carry, so prune never deletes it). Every
 * record Redis holds, indexed or not (record-names.ts). And a plan's change, written
 * into a transaction.
 */
import type { ChainableCommander } from 'ioredis'
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import { isoTimestamp } from '../../registry/records.js'
import {
  byKind, fileFields, KIND_ORDER, unfiledFields, type Change, type Kind, type RegistryState
} from '../model/registry-fields.js'
import { deleteIdentity } from './identities.js'
import { indexOf, recordKey, recordNames } from './record-names.js'
import { hgetallMany, type StoreContext } from './transactions.js'

export { indexOf, recordKey }

/** `beforeRead`: told every record key about to be read (apply WATCHes them first). */
export async function readState (
  redis: RegistryClient,
  keys: RedisKeys,
  beforeRead?: (recordKeys: string[]) => Promise<void>
): Promise<RegistryState> {
  const names = {} as Record<Kind, string[]>
  for (const kind of KIND_ORDER) names[kind] = await recordNames(redis, keys, kind)
  const keyIds = await redis.smembers(keys.keys)
  const all = KIND_ORDER.flatMap((kind) => names[kind].map((n) => recordKey(keys, kind, n)))
  await beforeRead?.(all)
  const hashes = await hgetallMany(redis, all)
  const records = byKind<Record<string, string>>()
  const unfiled = byKind<string[]>()
  let i = 0
  for (const kind of KIND_ORDER) {
    for (const name of names[kind]) {
      const h = hashes[i++] ?? {}
      if (Object.keys(h).length === 0) continue
      records[kind].set(name, fileFields(kind, h))
      const beyond = unfiledFields(kind, h)
      if (beyond.length > 0) unfiled[kind].set(name, beyond)
    }
  }
  const botKeys = new Map<string, string[]>()
  const personalKeys = new Map<string, string[]>()
  const identityKeys = new Map<string, string[]>()
  const add = (m: Map<string, string[]>, name: string, id: string): void => {
    m.set(name, [...m.get(name) ?? [], id].sort())
  }
  if (keyIds.length > 0) {
    const pipeline = redis.pipeline()
    for (const id of keyIds) pipeline.hmget(keys.key(id), 'type', 'role', 'status', 'user', 'identity')
    const replies = await pipeline.exec() ?? []
    keyIds.forEach((id, j) => {
      const [type, role, status, user, identity] = (replies[j]?.[1] ?? []) as Array<string | null>
      if (status !== 'active') return
      if (typeof identity === 'string' && identity !== '') add(identityKeys, identity, id)
      if (type === 'bot' && typeof role === 'string') add(botKeys, role, id)
      if (type === 'personal' && typeof user === 'string') add(personalKeys, user, id)
    })
  }
  return { records, botKeys, personalKeys, identityKeys, unfiled }
}

/** Whether a change ends the user's SSO sessions: a user's deletion or deactivation. */
export function endsSessions (c: Change): boolean {
  return c.kind === 'user' &&
    (c.op === 'delete' || c.fields.some((f) => f.field === 'status' && f.to === 'deactivated'))
}

/**
 * Writes one change of a plan into `tx`: the record, its index entry, a user's org index. A user's deletion or
 * deactivation ends its SSO sessions (`sessions`: their digests, read under WATCH); a deletion revokes the user's
 * personal keys the plan names.
 */
export function writeChange (
  ctx: StoreContext,
  tx: ChainableCommander,
  c: Change,
  sessions: readonly string[] = [],
  now = Date.now()
): void {
  const key = recordKey(ctx.keys, c.kind, c.name)
  const index = indexOf(ctx.keys, c.kind)
  if (endsSessions(c)) {
    for (const digest of sessions) tx.del(ctx.keys.session(digest))
    tx.del(ctx.keys.userSessions(c.name))
  }
  if (c.kind === 'identity') {
    writeIdentityChange(ctx, tx, c)
    return
  }
  if (c.op === 'delete') {
    tx.del(key).srem(index, c.name)
    if (c.kind === 'user' && c.fromOrg !== undefined) tx.srem(ctx.keys.orgUsers(c.fromOrg), c.name)
    const revokedAt = isoTimestamp(now)
    for (const id of c.revokesKeys ?? []) {
      tx.hset(ctx.keys.key(id), { status: 'revoked', revoked_at: revokedAt, revoked_reason: 'user_deleted' })
    }
    return
  }
  const set = writeFields(tx, key, c)
  tx.sadd(index, c.name)
  if (c.kind === 'user' && set.org !== undefined) {
    tx.sadd(ctx.keys.orgUsers(set.org), c.name)
    if (c.fromOrg !== undefined && c.fromOrg !== set.org) tx.srem(ctx.keys.orgUsers(c.fromOrg), c.name)
  }
}

/** A record's fields as the change leaves them: set or removed; the values set. */
function writeFields (tx: ChainableCommander, key: string, c: Change): Record<string, string> {
  const set: Record<string, string> = {}
  const removed: string[] = []
  for (const f of c.fields) {
    if (f.to === undefined) removed.push(f.field)
    else set[f.field] = f.to
  }
  if (Object.keys(set).length > 0) tx.hset(key, set)
  if (removed.length > 0) tx.hdel(key, ...removed)
  return set
}

/**
 * An identity's change, with its org's external-id index (store/identities.ts writes both, as `identities
 * put|delete` do); the plan never deletes one active keys name, nor moves one to another org.
 */
function writeIdentityChange (ctx: StoreContext, tx: ChainableCommander, c: Change): void {
  const field = (name: string): { from?: string | undefined, to?: string | undefined } | undefined =>
    c.fields.find((f) => f.field === name)
  if (c.op === 'delete') {
    deleteIdentity(ctx, tx, c.name, c.fromOrg ?? field('org')?.from ?? '', field('external_id')?.from ?? '')
    return
  }
  const key = ctx.keys.identity(c.name)
  const set = writeFields(tx, key, c)
  tx.sadd(ctx.keys.identities, c.name)
  const org = set.org ?? c.fromOrg
  const external = field('external_id')
  if (org === undefined || external === undefined) return
  if (external.from !== undefined) tx.hdel(ctx.keys.orgIdentities(org), external.from)
  if (external.to !== undefined) tx.hset(ctx.keys.orgIdentities(org), external.to, c.name)
}
