/**
 * What a principal may read, filtered in this one place for every front end: keys
 * (all at once, a page at a time, over the org's key policy), users, roles, orgs, and
 * request counts (src/usage/reader.ts). The policy's scope rules decide
 * (policy/scope-rules.ts): an admin reads everything; an org admin its own org's keys,
 * users and org record, and the roles it may give; a self principal its own user's
 * keys and user. A record outside the caller's scope is 404, existing or not; a listing
 * filtered to another org is empty. Refused reads are not audited.
 */
import { parseTimestamp } from '../../registry/records.js'
import { readKeysUsage, readUsage, type UsagePoint, type UsageRange } from '../../usage/reader.js'
import { readKeyRequests, type KeyRequestRecord, type KeyRequestsQuery } from '../../usage/key-requests-read.js'
import { AdminError } from '../model/errors.js'
import type { KeyView, OrgView, RoleView, UserView } from '../model/views.js'
import { keyCapOf } from '../policy/key-expiry.js'
import {
  givableRoles,
  keyUserFilter,
  orgFilter,
  requireOrgAdmin,
  seesKey,
  visibleKey,
  visibleUser
} from '../policy/scope-rules.js'
import { listKeyPage, type KeyPage } from '../store/key-pages.js'
import { listKeys as storeKeys, showKey as storeKey, type KeyFilter } from '../store/keys.js'
import { listOrgs as storeOrgs, orgRecord, orgsInUse, showOrg as storeOrg } from '../store/orgs.js'
import { listRoles as storeRoles, showRole as storeRole } from '../store/roles.js'
import { listUsers as storeUsers, showUser as storeUser } from '../store/users.js'
import { callerNames, type ActionContext } from './context.js'

export type { KeyFilter } from '../store/keys.js'
export type { KeyPage } from '../store/key-pages.js'

/** The key listing's filter as the caller may ask it (its own org, its own user's keys); `null`: nothing it may see. */
export function scopedKeyFilter (a: ActionContext, filter: KeyFilter): KeyFilter | null {
  const org = orgFilter(a.scope, filter.org)
  const user = keyUserFilter(a.scope, filter.user)
  return org === null || user === null ? null : { ...filter, org, user }
}

/**
 * Keys by user, by org, or all (key id order); `unusedForMs`: not used (nor created) within that long; `q`: a search.
 */
export async function listKeys (a: ActionContext, filter: KeyFilter = {}, now = Date.now()): Promise<KeyView[]> {
  const scoped = scopedKeyFilter(a, filter)
  return scoped === null ? [] : await storeKeys(a.store, scoped, now)
}

/** One page of that listing, in key id order, after `cursor` (store/key-pages.ts). */
export async function keyPage (
  a: ActionContext,
  filter: KeyFilter,
  page: { limit: number, cursor?: string | undefined },
  now = Date.now()
): Promise<KeyPage> {
  const scoped = scopedKeyFilter(a, filter)
  return scoped === null ? { keys: [] } : await listKeyPage(a.store, scoped, page, now)
}

/**
 * The active keys of an org that outlive its key policy (`key_max_ttl`): no expiry, or
 * one beyond now + the cap; none without one. `user`: only that user's.
 */
export async function keysOverPolicy (
  a: ActionContext,
  filter: { org: string, user?: string | undefined },
  now = Date.now()
): Promise<KeyView[]> {
  const scoped = scopedKeyFilter(a, filter)
  if (scoped === null || scoped.org === undefined) return []
  const { org, user } = scoped
  const cap = keyCapOf(org, await orgRecord(a.store, org))
  if (cap === undefined) return []
  return (await storeKeys(a.store, { org }, now)).filter((k) => {
    if (k.status !== 'active') return false
    if (user !== undefined && k.user !== user && k.created_by !== `user:${user}`) return false
    const expiry = parseTimestamp(k.expires_at ?? '')
    return expiry === undefined || expiry > now + cap
  })
}

export async function showKey (a: ActionContext, id: string, now = Date.now()): Promise<KeyView> {
  return visibleKey(a.scope, id, await storeKey(a.store, id, now).catch(missing))
}

export async function listUsers (a: ActionContext, filter: { org?: string | undefined } = {}): Promise<UserView[]> {
  requireOrgAdmin(a.scope, 'listing users')
  const org = orgFilter(a.scope, filter.org)
  return org === null ? [] : await storeUsers(a.store, { org })
}

export async function showUser (a: ActionContext, id: string): Promise<UserView> {
  return visibleUser(a.scope, id, await storeUser(a.store, id).catch(missing))
}

/** The roles the caller may give: all for an admin, those within its grants otherwise. */
export async function listRoles (a: ActionContext): Promise<RoleView[]> {
  return givableRoles(a.scope, await storeRoles(a.store))
}

/** A role, if the caller may give it (else 404, as if missing). */
export async function showRole (a: ActionContext, name: string): Promise<RoleView> {
  const role = await storeRole(a.store, name).catch(missing)
  if (role === undefined || givableRoles(a.scope, [role]).length === 0) {
    throw new AdminError(
    `role "${name}" does not exist`,
    'not_found'
    )
  }
  return role
}

/**
 * Org records, each with its limit's use now: an admin every one, an org admin its own.
 * `inUse`: also the orgs named on users or keys without a record, each entry with
 * `record` and its numbers of users and keys.
 */
export async function listOrgs (a: ActionContext, o: { inUse?: boolean | undefined } = {}): Promise<OrgView[]> {
  requireOrgAdmin(a.scope, 'listing orgs')
  const only = orgFilter(a.scope, undefined) ?? undefined
  const records = await storeOrgs(a.store, only)
  if (o.inUse !== true) return records
  const used = await orgsInUse(a.store, only)
  const views = new Map<string, OrgView>(records.map((v) => [v.org, { ...v, record: true }]))
  for (const org of used.keys()) if (!views.has(org)) views.set(org, { org, record: false })
  return [...views.values()]
    .map((v) => ({ ...v, users: used.get(v.org)?.users ?? 0, keys: used.get(v.org)?.keys ?? 0 }))
    .sort((x, y) => x.org < y.org ? -1 : x.org > y.org ? 1 : 0)
}

export async function showOrg (a: ActionContext, org: string): Promise<OrgView> {
  if (orgFilter(a.scope, org) === null) throw new AdminError(`org "${org}" has no record`, 'not_found')
  return await storeOrg(a.store, org)
}

/**
 * The caller's own org's key policy (ms), so a front end offers only the expiries it allows; undefined: none, or
 * malformed.
 */
export async function ownKeyCap (a: ActionContext): Promise<number | undefined> {
  const org = callerNames(a.scope).org
  if (org === undefined) return undefined
  try {
    return keyCapOf(org, await orgRecord(a.store, org))
  } catch (err: unknown) {
    if (err instanceof AdminError) return undefined
    throw err
  }
}

/** A key's request counts over a range, if the caller may read the key. */
/** A key's request counts over a range, with its environment (`live` or `test`), if the caller may read the key. */
export async function keyUsage (
  a: ActionContext, id: string, range: UsageRange
): Promise<{ env: 'live' | 'test', points: UsagePoint[] }> {
  const key = await showKey(a, id)
  return {
    env: key.env === 'test' ? 'test' : 'live',
    points: await readUsage(a.store.redis, a.store.keys, { key: id }, range)
  }
}

/** A key's last decisions, newest first (src/usage/key-requests.ts), if the caller may read the key. */
export async function keyRequests (a: ActionContext, id: string, q: KeyRequestsQuery): Promise<KeyRequestRecord[]> {
  await showKey(a, id)
  return await readKeyRequests(a.store.redis, a.store.keys, id, q)
}

/** An org's request counts over a range (the sum of its keys), if the caller may read the org. */
export async function orgUsage (a: ActionContext, org: string, range: UsageRange): Promise<UsagePoint[]> {
  if (orgFilter(a.scope, org) === null) throw new AdminError(`org "${org}" has no record`, 'not_found')
  return await readUsage(a.store.redis, a.store.keys, { org }, range)
}

/** Several keys' counts at once: a key the caller may not read, or without a record, is left out. */
export async function keysUsage (
  a: ActionContext,
  ids: readonly string[],
  range: UsageRange
): Promise<Array<{ id: string, points: UsagePoint[] }>> {
  const read = await readKeysUsage(a.store.redis, a.store.keys, ids, range)
  return read.flatMap((k) => k.owner !== undefined && seesKey(a.scope, k.owner) ? [{ id: k.id, points: k.points }] : [])
}

/** `.catch()` of a store read: a missing record is undefined (the scope rules answer for it). */
function missing (err: unknown): undefined {
  if (err instanceof AdminError && err.kind === 'not_found') return undefined
  throw err
}
