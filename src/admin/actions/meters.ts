/**
 * Allowance writes (docs/quotas.md), of a key or an org, each one change: read the record
 * under WATCH, ask the policy (policy/meters.ts), write the quota and add the credits
 * in one transaction, audited `quota.changed` and `credits.added`. And the allowance as
 * it stands, of a key and its org.
 */
import type { AllowanceView, KeyQuotaView } from '../model/views.js'
import { decideMeter, type MeterChange } from '../policy/meters.js'
import { setKeyFields } from '../store/keys.js'
import { allowanceOf } from '../store/meters.js'
import { orgRecord, putOrg } from '../store/orgs.js'
import { showKey } from './reads.js'
import { write, type ActionContext } from './context.js'

export type { MeterChange } from '../policy/meters.js'

export interface MeterChanged {
  changed: boolean
}

export async function meterKey (a: ActionContext, id: string, change: MeterChange): Promise<MeterChanged> {
  return await write(a, 'key.meter', `key:${id}`, async (w) => {
    const d = decideMeter(a.scope, await w.read({ keys: [id] }), { key: id }, change)
    if (d.quota === undefined && d.credits === undefined) return { changed: false }
    const tx = w.multi()
    if (d.quota !== undefined) {
      setKeyFields(a.store, tx, id, { quota: d.quota.next })
      tx.xadd(...a.store.audit.changeArgs('quota.changed', `key:${id}`, 'ok', d.quota.detail, d.org))
    }
    if (d.credits !== undefined) {
      tx.hincrby(a.store.keys.key(id), 'credits', d.credits.add)
      tx.xadd(...a.store.audit.changeArgs('credits.added', `key:${id}`, 'ok', d.credits.detail, d.org))
    }
    await w.commit(tx)
    return { changed: true }
  })
}

export async function meterOrg (a: ActionContext, org: string, change: MeterChange): Promise<MeterChanged> {
  return await write(a, 'org.meter', `org:${org}`, async (w) => {
    const d = decideMeter(a.scope, await w.read({ orgs: [org] }), { org }, change)
    if (d.quota === undefined && d.credits === undefined) return { changed: false }
    const tx = w.multi()
    if (d.quota !== undefined) {
      const next = d.quota.next
      putOrg(a.store, tx, org, next === null ? {} : { quota: next }, next === null ? ['quota'] : [])
      tx.xadd(...a.store.audit.changeArgs('quota.changed', `org:${org}`, 'ok', d.quota.detail, org))
    }
    if (d.credits !== undefined) {
      tx.hincrby(a.store.keys.org(org), 'credits', d.credits.add).sadd(a.store.keys.orgs, org)
      tx.xadd(...a.store.audit.changeArgs('credits.added', `org:${org}`, 'ok', d.credits.detail, org))
    }
    await w.commit(tx)
    return { changed: true }
  })
}

/** A key's allowance and its org's, as they stand: for whoever may read the key (reads.ts). */
export async function keyQuota (a: ActionContext, id: string, now = Date.now()): Promise<KeyQuotaView> {
  const view = await showKey(a, id, now)
  const record = await a.store.redis.hgetall(a.store.keys.key(id))
  const meter = view.meter ?? id
  const key = await allowanceOf(a.store, record, a.store.keys.meter('key', meter), now)
  const org = await orgAllowance(a, view.org, now)
  return { id, org: view.org, meter, key, org_allowance: org }
}

async function orgAllowance (a: ActionContext, org: string, now: number): Promise<AllowanceView> {
  return await allowanceOf(a.store, await orgRecord(a.store, org), a.store.keys.meter('org', org), now)
}
