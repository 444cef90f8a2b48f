/**
 * Shadow restrictions (docs/safe-change.md): a scope or address list tried on a key
 * before it is enforced. Recording one, promoting it (it becomes the key's live
 * restriction) and dropping it are each decided as a live restriction is
 * (key-changes.ts decideRestriction: who may restrict the key, a scope within the
 * caller's grants, addresses within the caller's key), so no caller tries or promotes a
 * restriction it could not set. The shadow fields hold the whole restriction the key
 * would have: a part not given is the live one's.
 */
import { isoTimestamp } from '../../registry/records.js'
import { AdminError } from '../model/errors.js'
import type { AdminScope } from '../model/principal.js'
import type { Snapshot } from '../model/snapshot.js'
import { decideRestriction, type KeyRestrictionChange } from './key-changes.js'
import { manageableKey } from './scope-rules.js'

/** The key record's fields of its shadow restriction; `shadow_since` marks that it has one. */
export const SHADOW_FIELDS = ['shadow_scope', 'shadow_allowed_cidrs', 'shadow_since'] as const

export interface ShadowChange {
  org: string | undefined
  /** the key record's fields to set (a value) or remove (null) */
  fields: Record<string, string | null>
  detail: Record<string, string>
}

/** Recording: the restriction the change would make live, kept beside the live one. */
export function decideShadowRestriction (
  s: AdminScope, snap: Snapshot, id: string, change: KeyRestrictionChange, now: number
): ShadowChange {
  const d = decideRestriction(s, snap, id, change)
  const key = snap.keys.get(id) ?? {}
  const next = d.changed ? d.next : { scope: key.scope ?? null, allowed_cidrs: key.allowed_cidrs ?? null }
  const fields = {
    shadow_scope: next.scope ?? '', shadow_allowed_cidrs: next.allowed_cidrs ?? '', shadow_since: isoTimestamp(now)
  }
  return {
    org: key.org,
    fields,
    detail: { shadow: 'recorded', scope: fields.shadow_scope, allowed_cidrs: fields.shadow_allowed_cidrs }
  }
}

/** Promoting: the shadow restriction becomes the live one, decided as a live restriction by this caller. */
export function decidePromotion (s: AdminScope, snap: Snapshot, id: string): ShadowChange {
  const key = shadowedKey(s, snap, id)
  const change: KeyRestrictionChange = {
    scope: listOf(key.shadow_scope), allowedCidrs: listOf(key.shadow_allowed_cidrs)
  }
  const d = decideRestriction(s, snap, id, change)
  const fields: Record<string, string | null> = dropped()
  if (d.changed) Object.assign(fields, d.next)
  return { org: key.org, fields, detail: { shadow: 'promoted', ...(d.changed ? d.detail : {}) } }
}

/** Dropping: the shadow restriction goes, the live one stays. */
export function decideShadowDrop (s: AdminScope, snap: Snapshot, id: string): ShadowChange {
  const key = shadowedKey(s, snap, id)
  // (who may drop it: who may restrict the key)
  decideRestriction(s, snap, id, {})
  return { org: key.org, fields: dropped(), detail: { shadow: 'dropped' } }
}

/** A key the caller may restrict, with a shadow restriction: 404 if not visible, 409 without one. */
function shadowedKey (s: AdminScope, snap: Snapshot, id: string): Record<string, string> {
  if (s.scope !== 'admin') manageableKey(s, snap, id, 'key.restrict')
  const key = snap.keys.get(id)
  if (key?.type === undefined) throw new AdminError(`key "${id}" does not exist`, 'not_found')
  if (key.shadow_since === undefined) {
    throw new AdminError(`key "${id}" has no shadow restriction; record one with --shadow first`, 'conflict')
  }
  return key
}

function listOf (text: string | undefined): string[] | null {
  const list = (text ?? '').split(/\s+/).filter((e) => e !== '')
  return list.length === 0 ? null : list
}

function dropped (): Record<string, string | null> {
  return Object.fromEntries(SHADOW_FIELDS.map((f) => [f, null]))
}
