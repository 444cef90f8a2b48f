/**
 * Shadow restrictions (policy/shadow-restrictions.ts, docs/safe-change.md): record one,
 * promote it to the key's live restriction, or drop it. Each is one audited change
 * (`key.restrict`, its detail's `shadow` saying which) under WATCH; promoting and
 * dropping also delete what the shadow restriction was counted to refuse.
 */
import type { KeyRestrictionChange } from '../policy/key-changes.js'
import {
  decidePromotion, decideShadowDrop, decideShadowRestriction, type ShadowChange
} from '../policy/shadow-restrictions.js'
import { dropShadowRefusals, setKeyFields } from '../store/keys.js'
import type { Snapshot } from '../model/snapshot.js'
import { write, type ActionContext } from './context.js'
import { readKey } from './keys.js'

/** Records the restriction `change` would make, tried on the key's requests and never enforced. */
export async function shadowRestrictKey (a: ActionContext, id: string, change: KeyRestrictionChange): Promise<void> {
  await shadowWrite(a, id, (snap) => decideShadowRestriction(a.scope, snap, id, change, Date.now()))
}

/** The key's shadow restriction becomes its live restriction (409 without one). */
export async function promoteShadowRestriction (a: ActionContext, id: string): Promise<void> {
  await shadowWrite(a, id, (snap) => decidePromotion(a.scope, snap, id))
}

/** The key's shadow restriction goes; the live one stays (409 without one). */
export async function dropShadowRestriction (a: ActionContext, id: string): Promise<void> {
  await shadowWrite(a, id, (snap) => decideShadowDrop(a.scope, snap, id))
}

async function shadowWrite (a: ActionContext, id: string, decide: (snap: Snapshot) => ShadowChange): Promise<void> {
  await write(a, 'key.restrict', `key:${id}`, async (w) => {
    const d = decide(await readKey(w, id, { acting: a.scope.scope !== 'admin' }))
    const tx = w.multi()
    setKeyFields(a.store, tx, id, d.fields)
    // (a new shadow restriction, or none: what the last one would have refused is gone)
    dropShadowRefusals(a.store, tx, id)
    tx.xadd(...a.store.audit.changeArgs('key.restrict', `key:${id}`, 'ok', d.detail, d.org))
    await w.commit(tx)
  })
}
