/**
 * A change's snapshot (model/snapshot.ts): the records it names, read on the change's
 * own connection, each WATCHed before it is read, all in one round trip. A record with no
 * field is absent; a key record's hash is left out.
 */
import type { RegistryClient } from '../../registry/redis-client.js'
import type { RedisKeys } from '../../registry/redis-keys.js'
import { snapshotOf, type Fields, type Snapshot, type SnapshotNames } from '../model/snapshot.js'

type RecordKind = 'users' | 'roles' | 'orgs' | 'keys' | 'identities'

/** Reads the records named (those not in `into` yet) into `into`, WATCHing each first; returns it. */
export async function readSnapshot (
  conn: RegistryClient,
  keys: RedisKeys,
  names: SnapshotNames,
  into: Snapshot = snapshotOf()
): Promise<Snapshot> {
  const redisKey: Record<RecordKind, (name: string) => string> = {
    users: keys.user,
    roles: keys.role,
    orgs: keys.org,
    keys: keys.key,
    identities: keys.identity
  }
  const wanted: Array<[RecordKind, string]> = []
  for (const kind of ['users', 'roles', 'orgs', 'keys', 'identities'] as const) {
    for (const name of new Set(names[kind] ?? [])) {
      if (name !== undefined && !into[kind].has(name)) {
        wanted.push([
          kind,
          name
        ])
      }
    }
  }
  const lookups = [...new Set(names.imported ?? [])].filter((sha256) => !into.imported.has(sha256))
  const emails = [...new Set(names.emails ?? [])].filter((e): e is string => e !== undefined && !into.emails.has(e))
  const watched = [
    ...wanted.map(([kind, name]) => redisKey[kind](name)),
    ...lookups.map((sha256) => keys.imported(sha256)),
    ...emails.map((email) => keys.userEmail(email))
  ]
  if (watched.length === 0) return into
  await conn.watch(...watched)
  // (issued together: one round trip)
  const [records, ids, holders] = await Promise.all([
    Promise.all(wanted.map(async ([kind, name]) => await conn.hgetall(redisKey[kind](name)))),
    lookups.length === 0 ? [] : conn.mget(...lookups.map((sha256) => keys.imported(sha256))),
    Promise.all(emails.map(async (email) => await conn.get(keys.userEmail(email))))
  ])
  wanted.forEach(([kind, name], i) => {
    const record = records[i] ?? {}
    if (Object.keys(record).length === 0) return
    if (kind === 'keys') delete record.hash
    const found = into[kind] as Map<string, Fields>
    found.set(name, record)
  })
  lookups.forEach((sha256, i) => {
    const id = ids[i]
    if (id !== null && id !== undefined) (into.imported as Map<string, string>).set(sha256, id)
  })
  emails.forEach((email, i) => {
    const id = holders[i]
    if (id !== null && id !== undefined) (into.emails as Map<string, string>).set(email, id)
  })
  return into
}
