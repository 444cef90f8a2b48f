/**
 * Identities (docs/identities.md): who may put, delete and meter one, and what its
 * fields must be. An admin manages every org's; an org admin its own org's only (an
 * identity elsewhere answers exactly as a missing one); a self principal none. An org
 * admin may set an identity's rate limit, quota and credits: each is one more limit its
 * keys meet, beside the key's, the role's and the org's, so it can only narrow what the
 * org's keys may do, never widen it.
 *
 * `meta` is checked for shape and size (a JSON object of at most 1 KB); its content is
 * never quoted in a refusal, a detail or the audit trail.
 */
import { EXTERNAL_ID, IDENTITY_ID, metaProblem, metaText } from '../../registry/records.js'
import { AdminError, type ErrorDetail } from '../model/errors.js'
import type { AdminScope } from '../model/principal.js'
import type { Fields, Snapshot } from '../model/snapshot.js'
import { checkName, rateLimitProblem, quotaProblem, creditsProblem } from './names.js'
import { denied } from './refusals.js'
import { requireOrgAdmin } from './scope-rules.js'

/** A field not given is kept; `null` removes `meta`, `rate_limit` or `quota`. */
export interface IdentityInput {
  org?: string | undefined
  externalId?: string | undefined
  meta?: Record<string, unknown> | null | undefined
  rateLimit?: string | null | undefined
  quota?: string | null | undefined
  /** the credits granted (a new identity only; `identities meter --add-credits` adds to them) */
  credits?: number | undefined
}

export interface IdentityPut {
  org: string
  created: boolean
  fields: Record<string, string>
  removed: string[]
  /** the external id the identity leaves (its org's index entry is removed), if it changed */
  formerExternalId?: string | undefined
  /** for the audit trail: the fields changed, `meta` never shown (its size alone) */
  detail: Record<string, string>
}

/** The `meta` refusal every front end gives: 400 `invalid` with `details` (the value never quoted). */
export function checkMeta (value: unknown): string {
  const problem = metaProblem(value)
  if (problem !== undefined) throw new AdminError(problem, 'invalid', undefined, [{ field: 'meta', reason: problem }])
  return metaText(value as Record<string, unknown>)
}

export function checkIdentityId (id: string): void {
  if (!IDENTITY_ID.test(id)) {
    throw new AdminError(`invalid identity id "${id}" (letters, digits and _.@:- ; up to 128 characters)`)
  }
}

/** The identity's record as the caller may see it: an org admin only its own org's (others: 404). */
export function visibleIdentity (s: AdminScope, id: string, record: Fields | undefined): Fields {
  if (record?.org === undefined) throw new AdminError(`identity "${id}" does not exist`, 'not_found')
  if (s.scope !== 'admin' && record.org !== s.org) {
    throw denied(s, 'not_found', `identity "${id}" does not exist`)
  }
  return record
}

/**
 * A put, over the snapshot of the identity and the holder of the external id asked for
 * (`holder`: the identity id the org's index names for it, if any).
 */
export function decidePutIdentity (
  s: AdminScope, snap: Snapshot, id: string, input: IdentityInput, holder: string | null
): IdentityPut {
  requireOrgAdmin(s, 'an identity')
  checkIdentityId(id)
  const existing = snap.identities.get(id)
  const created = existing?.org === undefined
  if (!created) visibleIdentity(s, id, existing)
  const org = existing?.org ?? input.org ?? (s.scope === 'admin' ? undefined : s.org)
  if (org === undefined) throw new AdminError('a new identity needs an org')
  checkName('org', org)
  if (!created && input.org !== undefined && input.org !== existing?.org) {
    throw new AdminError(`identity "${id}" is in org "${existing?.org ?? ''}": an identity never moves to another org`)
  }
  if (s.scope !== 'admin' && org !== s.org) {
    throw denied(s, 'forbidden', `identities are managed in the caller's own org (${s.org}) only`)
  }
  const externalId = input.externalId ?? existing?.external_id
  if (externalId === undefined) throw new AdminError('a new identity needs an external id')
  const details: ErrorDetail[] = []
  if (!EXTERNAL_ID.test(externalId)) {
    details.push({ field: 'external_id', reason: 'an external id is 1 to 256 printable characters, without spaces' })
  }
  if (typeof input.rateLimit === 'string') {
    const p = rateLimitProblem(input.rateLimit)
    if (p !== undefined) details.push({ field: 'rate_limit', reason: p })
  }
  if (typeof input.quota === 'string') {
    const p = quotaProblem(input.quota)
    if (p !== undefined) details.push({ field: 'quota', reason: p })
  }
  if (input.credits !== undefined) {
    if (!created) details.push({ field: 'credits', reason: 'credits are added with the meter call, not set again' })
    const p = creditsProblem(input.credits)
    if (p !== undefined) details.push({ field: 'credits', reason: p })
  }
  if (details.length > 0) throw new AdminError(details.map((d) => d.reason).join('; '), 'invalid', undefined, details)
  const fields: Record<string, string> = {}
  const detail: Record<string, string> = {}
  if (created) fields.org = org
  if (externalId !== existing?.external_id) {
    if (holder !== null && holder !== id) {
      throw new AdminError(`external id "${externalId}" already names identity "${holder}" in org ${org}`, 'conflict')
    }
    fields.external_id = externalId
  }
  if (input.meta !== undefined && input.meta !== null) fields.meta = checkMeta(input.meta)
  if (typeof input.rateLimit === 'string') fields.rate_limit = input.rateLimit
  if (typeof input.quota === 'string') fields.quota = input.quota
  if (input.credits !== undefined) fields.credits = String(input.credits)
  const removed = [
    ...input.meta === null ? ['meta'] : [],
    ...input.rateLimit === null ? ['rate_limit'] : [],
    ...input.quota === null ? ['quota'] : []
  ].filter((f) => existing?.[f] !== undefined)
  for (const [f, v] of Object.entries(fields)) detail[f] = f === 'meta' ? `${Buffer.byteLength(v)} bytes` : v
  for (const f of removed) detail[f] = ''
  const formerExternalId = !created && fields.external_id !== undefined ? existing?.external_id : undefined
  return { org, created, fields, removed, formerExternalId, detail }
}

export interface IdentityDelete {
  org: string
  externalId: string
  /** the keys revoked with it (`force`) */
  revoke: string[]
}

/** A delete: refused while keys name the identity, unless `force`, which revokes them. */
export function decideDeleteIdentity (
  s: AdminScope, snap: Snapshot, id: string, keyIds: readonly string[], force: boolean
): IdentityDelete {
  requireOrgAdmin(s, 'an identity')
  const record = visibleIdentity(s, id, snap.identities.get(id))
  const live = keyIds.filter((k) => snap.keys.get(k)?.status === 'active')
  if (live.length > 0 && !force) {
    throw new AdminError(
      `identity "${id}" has ${live.length} active key(s): revoke them first, or force (which revokes them)`,
      'conflict',
      undefined,
      [{ field: 'keys', reason: `${live.length} active key(s) name the identity` }]
    )
  }
  return { org: record.org as string, externalId: record.external_id ?? '', revoke: live }
}

/** The identity a new BOT key names: it must exist in the key's org (the caller's scope was checked for the key). */
export function checkKeyIdentity (snap: Snapshot, id: string, org: string): void {
  const record = snap.identities.get(id)
  if (record?.org !== org) {
    throw new AdminError(`identity "${id}" does not exist in org ${org}`, 'invalid', undefined, [
      { field: 'identity', reason: `no identity "${id}" in org ${org}` }
    ])
  }
}
