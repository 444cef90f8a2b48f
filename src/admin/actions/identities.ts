/**
 * Identities (docs/identities.md): put, delete (with `force`, its keys revoked in the
 * same transaction), meter, and the reads (the identity, its keys, their request counts
 * summed), as the principal may see them
 * (policy/identities.ts decides). Every write reads the records it concerns under WATCH,
 * the external id's index entry included, so two puts cannot give one external id to two
 * identities of an org. The audit trail shows `meta` by its size alone.
 */
import { isoTimestamp } from '../../registry/records.js'
import {
  addPoints, BATCH_MAX_POINTS, bucketsOf, readKeysUsage, zeroPoints, type UsagePoint, type UsageRange
} from '../../usage/reader.js'
import type { IdentityView, KeyView } from '../model/views.js'
import {
  decideDeleteIdentity, decidePutIdentity, visibleIdentity, type IdentityInput
} from '../policy/identities.js'
import { decideMeter, type MeterChange } from '../policy/meters.js'
import { orgFilter, requireOrgAdmin, seesKey } from '../policy/scope-rules.js'
import {
  deleteIdentity as removeIdentity, identityKeyIds, identityRecord, identityView, listIdentities as storeIdentities,
  putIdentity as writeIdentity
} from '../store/identities.js'
import { recordViews, setKeyFields, withLimitUse } from '../store/keys.js'
import { callerNames, write, type ActionContext } from './context.js'
import type { MeterChanged } from './meters.js'

export type { IdentityInput } from '../policy/identities.js'

export async function putIdentity (
  a: ActionContext, id: string, input: IdentityInput, now = Date.now()
): Promise<{ created: boolean, identity: IdentityView }> {
  return await write(a, 'identity.put', `identity:${id}`, async (w) => {
    const snap = await w.read({ identities: [id] })
    const org = snap.identities.get(id)?.org ?? input.org ?? callerNames(a.scope).org
    const externalId = input.externalId ?? snap.identities.get(id)?.external_id
    let holder: string | null = null
    if (org !== undefined && externalId !== undefined) {
      const conn = await w.connection()
      await conn.watch(a.store.keys.orgIdentities(org))
      holder = await conn.hget(a.store.keys.orgIdentities(org), externalId)
    }
    const put = decidePutIdentity(a.scope, snap, id, input, holder)
    const tx = w.multi()
    writeIdentity(a.store, tx, id, put)
    tx.xadd(...a.store.audit.changeArgs('identity.put', `identity:${id}`, 'ok', put.detail, put.org))
    await w.commit(tx)
    return { created: put.created, identity: await identityView(a.store, id, await identityRecord(a.store, id), now) }
  })
}

/** Deletes an identity; with `force`, its active keys are revoked in the same transaction. */
export async function deleteIdentity (
  a: ActionContext, id: string, force: boolean, now = Date.now()
): Promise<{ revoked: string[] }> {
  return await write(a, 'identity.delete', `identity:${id}`, async (w) => {
    const conn = await w.connection()
    await conn.watch(a.store.keys.identityKeys(id))
    const keyIds = await conn.smembers(a.store.keys.identityKeys(id))
    const snap = await w.read({ identities: [id], keys: keyIds })
    const d = decideDeleteIdentity(a.scope, snap, id, keyIds, force)
    const tx = w.multi()
    for (const k of d.revoke) {
      const revoked = { status: 'revoked', revoked_at: isoTimestamp(now), revoked_reason: 'identity_deleted' }
      setKeyFields(a.store, tx, k, revoked)
      tx.xadd(...a.store.audit.changeArgs('key.revoke', `key:${k}`, 'ok', { from: 'active', identity: id }, d.org))
    }
    removeIdentity(a.store, tx, id, d.org, d.externalId)
    tx.xadd(...a.store.audit.changeArgs('identity.delete', `identity:${id}`, 'ok', {
      external_id: d.externalId, revoked: d.revoke.join(' ')
    }, d.org))
    await w.commit(tx)
    return { revoked: d.revoke }
  })
}

/** An identity's quota (set, or `null`: removed) and credits added (docs/quotas.md). */
export async function meterIdentity (a: ActionContext, id: string, change: MeterChange): Promise<MeterChanged> {
  return await write(a, 'identity.meter', `identity:${id}`, async (w) => {
    const snap = await w.read({ identities: [id] })
    const d = decideMeter(a.scope, snap, { identity: id }, change)
    if (d.quota === undefined && d.credits === undefined) return { changed: false }
    const tx = w.multi()
    const record = a.store.keys.identity(id)
    if (d.quota !== undefined) {
      if (d.quota.next === null) tx.hdel(record, 'quota')
      else tx.hset(record, 'quota', d.quota.next)
      tx.xadd(...a.store.audit.changeArgs('quota.changed', `identity:${id}`, 'ok', d.quota.detail, d.org))
    }
    if (d.credits !== undefined) {
      tx.hincrby(record, 'credits', d.credits.add)
      tx.xadd(...a.store.audit.changeArgs('credits.added', `identity:${id}`, 'ok', d.credits.detail, d.org))
    }
    await w.commit(tx)
    return { changed: true }
  })
}

export async function showIdentity (a: ActionContext, id: string, now = Date.now()): Promise<IdentityView> {
  return await identityView(a.store, id, await readableIdentity(a, id), now)
}

/** The keys that name the identity (its index set), as the caller may read them, with their limits' use. */
export async function identityKeys (a: ActionContext, id: string, now = Date.now()): Promise<KeyView[]> {
  await readableIdentity(a, id)
  const views = (await recordViews(a.store, await identityKeyIds(a.store, id), now)).filter((k) => seesKey(a.scope, k))
  await withLimitUse(a.store, views, now)
  return views
}

/**
 * An identity's request counts over a range: the sum of its keys' (those the caller may read), read at most
 * BATCH_MAX_POINTS points a pipeline; `keys`: how many were summed.
 */
export async function identityUsage (
  a: ActionContext, id: string, range: UsageRange
): Promise<{ keys: number, points: UsagePoint[] }> {
  await readableIdentity(a, id)
  const ids = await identityKeyIds(a.store, id)
  const points = zeroPoints(range)
  const perRead = Math.max(1, Math.floor(BATCH_MAX_POINTS / Math.max(1, bucketsOf(range).count)))
  let keys = 0
  for (let i = 0; i < ids.length; i += perRead) {
    for (const k of await readKeysUsage(a.store.redis, a.store.keys, ids.slice(i, i + perRead), range)) {
      if (k.owner === undefined || !seesKey(a.scope, k.owner)) continue
      addPoints(points, k.points)
      keys++
    }
  }
  return { keys, points }
}

/** The identity's record, if the caller may read it: an admin any, an org admin its own org's (else 404). */
async function readableIdentity (a: ActionContext, id: string): Promise<Record<string, string>> {
  requireOrgAdmin(a.scope, 'identities')
  const r = await identityRecord(a.store, id)
  visibleIdentity(a.scope, id, Object.keys(r).length === 0 ? undefined : r)
  return r
}

/** The identities the principal may see: an admin's every org's (or `org`'s), an org admin's own org's. */
export async function listIdentities (a: ActionContext, org?: string): Promise<IdentityView[]> {
  requireOrgAdmin(a.scope, 'identities')
  const only = orgFilter(a.scope, org)
  if (only === null) return []
  const views = await storeIdentities(a.store, only)
  await Promise.all(views.map(async (v) => { v.keys = await identityKeyIds(a.store, v.id) }))
  return views
}
