/**
 * User records: org, role, status, name and email; indexed globally and per org, listed
 * as Redis holds them (record-names.ts); their SSO sessions.
 */
import type { ChainableCommander } from 'ioredis'
import { AdminError } from '../model/errors.js'
import { userViewOf, type UserView } from '../model/views.js'
import { recordNames } from './record-names.js'
import { hgetallMany, type StoreContext } from './transactions.js'

export async function listUsers (ctx: StoreContext, filter: { org?: string | undefined } = {}): Promise<UserView[]> {
  // every user Redis holds (an org's: its index too, then each record's org decides)
  const ids = await recordNames(
    ctx.redis,
    ctx.keys,
    'user',
    filter.org === undefined ? undefined : ctx.keys.orgUsers(filter.org)
  )
  const records = await hgetallMany(ctx.redis, ids.map((id) => ctx.keys.user(id)))
  return ids.flatMap((id, i) => {
    const r = records[i]
    if (r === undefined || Object.keys(r).length === 0) return []
    if (filter.org !== undefined && r.org !== filter.org) return []
    return [userViewOf(id, r)]
  })
}

/**
 * The user other than `id` whose record holds `email` (lower case), among every user Redis
 * holds: what the email index does not know (a record written with redis-cli or a
 * registry file), found by reading the records. undefined: none.
 */
export async function unindexedEmailHolder (ctx: StoreContext, email: string, id: string): Promise<string | undefined> {
  return (await listUsers(ctx)).find((u) => u.id !== id && u.email?.toLowerCase() === email)?.id
}

export async function showUser (ctx: StoreContext, id: string): Promise<UserView> {
  const r = await ctx.redis.hgetall(ctx.keys.user(id))
  if (Object.keys(r).length === 0) throw new AdminError(`user "${id}" does not exist`, 'not_found')
  return userViewOf(id, r)
}

/** Writes a user's fields and its index entries into `tx`; `fromOrg`: the org it leaves; `fromEmail`: the email. */
export function putUser (
  ctx: StoreContext,
  tx: ChainableCommander,
  id: string,
  fields: Record<string,
  string>,
  fromOrg: string | undefined,
  fromEmail?: string | undefined
): void {
  const org = fields.org as string
  tx.hset(ctx.keys.user(id), fields).sadd(ctx.keys.users, id).sadd(ctx.keys.orgUsers(org), id)
  if (fromOrg !== undefined) tx.srem(ctx.keys.orgUsers(fromOrg), id)
  // the email index: the email's user (the one it gives up: gone)
  const email = fields.email?.toLowerCase()
  if (fromEmail !== undefined && fromEmail !== email) tx.del(ctx.keys.userEmail(fromEmail))
  if (email !== undefined && email !== '') tx.set(ctx.keys.userEmail(email), id)
}

/** The user's SSO sessions (src/admin/sso/sessions.ts), by digest. */
export async function userSessions (ctx: StoreContext, id: string): Promise<string[]> {
  return await ctx.redis.smembers(ctx.keys.userSessions(id))
}

/**
 * Sets the user's status into `tx`; deactivating also ends the sessions given (one
 * begun meanwhile is refused at its next request all the same: the user is inactive).
 */
export function setUserStatus (
  ctx: StoreContext,
  tx: ChainableCommander,
  id: string,
  status: 'active' | 'deactivated',
  sessions: readonly string[]
): void {
  tx.hset(ctx.keys.user(id), 'status', status)
  for (const digest of sessions) tx.del(ctx.keys.session(digest))
  if (status === 'deactivated') tx.del(ctx.keys.userSessions(id))
}
