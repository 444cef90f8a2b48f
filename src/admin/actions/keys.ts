/**
 * Key writes, each one change: read the records it concerns under WATCH, ask the
 * policy (policy/key-creation.ts, policy/key-changes.ts), write the record, its index
 * entries and its audit entry in one transaction. Create (the only moment the secret
 * exists outside its holder), revoke, rotate, restrict, and the key's own rate limit.
 */
import { generateKey, prefixFor } from '../../registry/key-format.js'
import { isoTimestamp } from '../../registry/records.js'
import type { Snapshot } from '../model/snapshot.js'
import type { CreatedKey, RotatedKey } from '../model/views.js'
import {
  decideKeyLimit,
  decideRestriction,
  decideRevoke,
  decideRotation,
  type KeyRestrictionChange
} from '../policy/key-changes.js'
import { decideKeyCreation, keyCreationTarget } from '../policy/key-creation.js'
import type { KeyRequest } from '../policy/key-input.js'
import { auditedRecord, createdKeyOf } from '../policy/key-records.js'
import { addKey, setKeyFields } from '../store/keys.js'
import { ownedKeyStates, purgeKey, type OwnedKeyState } from '../store/key-bounds.js'
import { decideKeyCount, keysToPurge } from '../policy/key-bounds.js'
import { rootUserOf } from '../model/actors.js'
import type { Watch } from '../store/transactions.js'
import { callerNames, write, type ActionContext, type Warned } from './context.js'

export async function createKey (a: ActionContext, r: KeyRequest, now = Date.now()): Promise<Warned<CreatedKey>> {
  const caller = callerNames(a.scope)
  return await write(a, 'key.create', keyCreationTarget(a.scope, r), async (w) => {
    // its user (a personal key's: its role and org), its role, its creator, its org
    const user = r.type === 'personal' ? r.user ?? caller.user : undefined
    // (and the key the caller signed in with: the root of the new key's chain of creators)
    const snap = await w.read({
      users: [user, r.createdBy, caller.user],
      roles: [r.role],
      orgs: [r.org ?? caller.org],
      keys: [a.scope.key?.id],
      identities: [r.identity]
    })
    const owner = snap.users.get(user ?? '')
    await w.read({ roles: [owner?.role], orgs: [owner?.org] }, snap)
    const { input, org, record, warnings } = decideKeyCreation(
      a.scope,
      snap,
      r,
      { selfServiceMaxTtlMs: a.selfServiceMaxTtlMs, actor: a.store.actor, now }
    )
    const purged = await boundOwnedKeys(a, record, now)
    const { id, key, hash } = generateKey(prefixFor(a.store.keyPrefix, record.env))
    const tx = w.multi()
    addKey(a.store, tx, id, { type: record.type as string, hash, ...record })
    tx.xadd(...a.store.audit.changeArgs('key.create', `key:${id}`, 'ok', auditedRecord(record), org))
    if (purged !== undefined) {
      for (const k of purged.keys) purgeKey(a.store, tx, purged.owner, k)
      const detail = { keys: purged.keys.map((k) => k.id).join(' ') }
      tx.xadd(...a.store.audit.changeArgs('key.purge', `user:${purged.owner}`, 'ok', detail, org))
    }
    await w.commit(
      tx,
      `${input.type === 'personal' ? 'the key\'s user' : 'the key\'s role'} changed while the key was created; ` +
        'nothing was written, try again'
    )
    return { result: createdKeyOf(id, key, record, input), warnings }
  })
}

/**
 * The new key's owner's keys as they are now (not WATCHed: creations for one user run side by side, and those in
 * flight at once may pass the cap by their number): refused past `keys.max_per_user` live ones; the dead ones past
 * `keys.purge_after`, to delete with the creation (deleting one twice is harmless).
 */
async function boundOwnedKeys (
  a: ActionContext, record: Record<string, string>, now: number
): Promise<{ owner: string, keys: OwnedKeyState[] } | undefined> {
  const owner = rootUserOf({ type: record.type as string, ...record })
  if (owner === undefined) return undefined
  const owned = await ownedKeyStates(a.store.redis, a.store, owner, now)
  decideKeyCount(owner, owned, a.keyBounds.maxPerUser)
  const keys = keysToPurge(owned, a.keyBounds.purgeAfterMs, now)
  return keys.length === 0 ? undefined : { owner, keys }
}

export async function revokeKey (a: ActionContext, id: string, now = Date.now()): Promise<{ changed: boolean }> {
  return await write(a, 'key.revoke', `key:${id}`, async (w) => {
    const change = decideRevoke(a.scope, await readKey(w, id, { acting: a.scope.scope !== 'admin' }), id)
    if (!change.changed) return { changed: false }
    const tx = w.multi()
    setKeyFields(a.store, tx, id, { status: 'revoked', revoked_at: isoTimestamp(now) })
    tx.xadd(...a.store.audit.changeArgs('key.revoke', `key:${id}`, 'ok', { from: change.from }, change.org))
    await w.commit(tx)
    return { changed: true }
  })
}

/** A new key replacing the old one, which works until now + `graceMs` (or its own earlier expiry). */
export async function rotateKey (a: ActionContext, id: string, graceMs: number, now = Date.now()): Promise<RotatedKey> {
  // WATCHed: a revoke (or any edit) of the old key, or a move of a personal key's user,
  // between the reads and the write aborts the rotation instead of minting a
  // replacement for a revoked key or a key in an org its user has left
  return await write(a, 'key.rotate', `key:${id}`, async (w) => {
    const rotation = decideRotation(
      a.scope,
      await readKey(w, id, { acting: true, org: true }),
      id,
      graceMs,
      { selfServiceMaxTtlMs: a.selfServiceMaxTtlMs, actor: a.store.actor, now }
    )
    const { id: newId, key, hash } = generateKey(prefixFor(a.store.keyPrefix, rotation.record.env))
    const replaces = { expires_at: rotation.replacesExpiresAt, replaced_by: newId }
    const tx = w.multi()
    addKey(a.store, tx, newId, { type: rotation.record.type as string, hash, ...rotation.record })
    setKeyFields(a.store, tx, id, replaces)
    // (the env tells the `key.rotated` webhook event: src/webhooks/audit-events.ts)
    const detail = {
      new_key: newId,
      replaces_expires_at: rotation.replacesExpiresAt,
      env: rotation.record.env === 'test' ? 'test' : 'live'
    }
    tx.xadd(...a.store.audit.changeArgs('key.rotate', `key:${id}`, 'ok', detail, rotation.org))
    await w.commit(tx, `key "${id}" changed during the rotation; nothing was written, try again`)
    return {
      ...createdKeyOf(newId, key, rotation.record, rotation.input),
      replaces: id,
      replaces_expires_at: rotation.replacesExpiresAt
    }
  })
}

/** The key's scope and addresses: a list sets one, `null` removes it, undefined keeps it. */
export async function restrictKey (
  a: ActionContext,
  id: string,
  change: KeyRestrictionChange
): Promise<{ changed: boolean }> {
  return await write(a, 'key.restrict', `key:${id}`, async (w) => {
    const d = decideRestriction(a.scope, await readKey(w, id, { acting: a.scope.scope !== 'admin' }), id, change)
    if (!d.changed) return { changed: false }
    const tx = w.multi()
    setKeyFields(a.store, tx, id, d.next)
    tx.xadd(...a.store.audit.changeArgs('key.restrict', `key:${id}`, 'ok', d.detail, d.org))
    await w.commit(tx)
    return { changed: true }
  })
}

/** The key's own rate limit; `null` removes it. */
export async function setKeyLimit (a: ActionContext, id: string, limit: string | null): Promise<{ changed: boolean }> {
  return await write(a, 'key.limit', `key:${id}`, async (w) => {
    const d = decideKeyLimit(a.scope, await w.read({ keys: [id] }), id, limit)
    if (!d.changed) return { changed: false }
    const tx = w.multi()
    setKeyFields(a.store, tx, id, { rate_limit: limit })
    tx.xadd(...a.store.audit.changeArgs('key.limit', `key:${id}`, 'ok', d.detail, d.org))
    await w.commit(tx)
    return { changed: true }
  })
}

/**
 * A key; with `acting`, what it acts as (its user, if personal, and the role it acts with); with `org`, its org's
 * record.
 */
export async function readKey (w: Watch, id: string, o: { acting: boolean, org?: boolean }): Promise<Snapshot> {
  const snap = await w.read({ keys: [id] })
  const key = snap.keys.get(id)
  if (!o.acting || key === undefined) return snap
  await w.read(
    {
      users: [key.type === 'personal' ? key.user : undefined],
      roles: [key.role],
      orgs: [o.org === true ? key.org : undefined]
    },
    snap
  )
  return await w.read({ roles: [snap.users.get(key.user ?? '')?.role] }, snap)
}
