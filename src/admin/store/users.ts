/** Users: org, role, status, name and email; indexed globally and per org. */
import { isoTimestamp } from '../../registry/records.js'
import { AdminError } from '../model/errors.js'
import { listKeys } from './keys.js'
import { checkName } from '../policy/rules.js'
import { audited, commit, hgetallMany, type StoreContext } from './transactions.js'
import type { UserView } from '../model/views.js'

export interface UserStatusChange {
  changed: boolean
  /** the user's BOT keys (created by them) that are active, after the change */
  createdKeys: string[]
  /** the ones this change revoked */
  revokedKeys: string[]
}

/** `createOnly`: a new user only (an existing id is a conflict), audited as `user.create` (SSO's new users: src/admin/sso/match.ts). */
export async function putUser (ctx: StoreContext, id: string, input: { org: string, role: string, name?: string, email?: string }, o: { createOnly?: boolean } = {}): Promise<{ created: boolean }> {
  const action = o.createOnly === true ? 'user.create' : 'user.put'
  return await audited(ctx, action, `user:${id}`, async () => {
    checkName('user id', id)
    checkName('org', input.org)
    checkName('role', input.role)
    const existing = await ctx.redis.hgetall(ctx.keys.user(id))
    if (o.createOnly === true && Object.keys(existing).length > 0) throw new AdminError(`user "${id}" exists`, 'conflict')
    const fields: Record<string, string> = { org: input.org, role: input.role }
    if (existing.status === undefined) fields.status = 'active'
    if (input.name !== undefined) fields.name = input.name
    if (input.email !== undefined) fields.email = input.email
    const tx = ctx.redis.multi().hset(ctx.keys.user(id), fields).sadd(ctx.keys.users, id).sadd(ctx.keys.orgUsers(input.org), id)
    if (existing.org !== undefined && existing.org !== input.org) tx.srem(ctx.keys.orgUsers(existing.org), id)
    tx.xadd(...ctx.audit.changeArgs(action, `user:${id}`, 'ok', fields, input.org))
    await commit(tx)
    return { created: existing.status === undefined }
  })
}

/**
 * Deactivating stops every personal key of the user at once (the key records are
 * untouched) and ends the user's SSO sessions. The BOT keys the user created are independent of the user: they are
 * reported, and revoked in the same transaction only when `revokeCreatedKeys` asks
 * (`inOrg`: only those in that org, the ones an org admin may see).
 */
export async function setUserStatus (ctx: StoreContext, id: string, status: 'active' | 'deactivated', o: { revokeCreatedKeys?: boolean, inOrg?: string }, now: number): Promise<UserStatusChange> {
  const action = status === 'active' ? 'user.activate' : 'user.deactivate'
  return await audited(ctx, action, `user:${id}`, async () => {
    const [current, org] = await ctx.redis.hmget(ctx.keys.user(id), 'status', 'org')
    if (current === null || current === undefined) throw new AdminError(`user "${id}" does not exist`, 'not_found')
    const created = (await listKeys(ctx, { user: id, org: o.inOrg }, now))
      .filter((k) => k.type === 'bot' && k.status === 'active')
      .map((k) => k.id)
    const revokedKeys = o.revokeCreatedKeys === true ? created : []
    // deactivating also ends the user's SSO sessions (src/admin/sso/sessions.ts); one
    // begun meanwhile is refused at its next request all the same (the user is inactive)
    const sessions = status === 'deactivated' ? await ctx.redis.smembers(ctx.keys.userSessions(id)) : []
    const tx = ctx.redis.multi().hset(ctx.keys.user(id), 'status', status)
    for (const digest of sessions) tx.del(ctx.keys.session(digest))
    if (status === 'deactivated') tx.del(ctx.keys.userSessions(id))
    for (const keyId of revokedKeys) tx.hset(ctx.keys.key(keyId), { status: 'revoked', revoked_at: isoTimestamp(now) })
    const detail: Record<string, string> = { from: current, to: status }
    if (revokedKeys.length > 0) detail.revoked_keys = revokedKeys.join(' ')
    tx.xadd(...ctx.audit.changeArgs(action, `user:${id}`, 'ok', detail, org ?? undefined))
    await commit(tx)
    return { changed: current !== status, createdKeys: created.filter((k) => !revokedKeys.includes(k)), revokedKeys }
  })
}

export async function listUsers (ctx: StoreContext, filter: { org?: string | undefined } = {}): Promise<UserView[]> {
  const ids = (await ctx.redis.smembers(filter.org === undefined ? ctx.keys.users : ctx.keys.orgUsers(filter.org))).sort()
  const records = await hgetallMany(ctx.redis, ids.map((id) => ctx.keys.user(id)))
  return ids.flatMap((id, i) => {
    const r = records[i]
    if (r === undefined || Object.keys(r).length === 0) return []
    if (filter.org !== undefined && r.org !== filter.org) return []
    return [userView(id, r)]
  })
}

export async function showUser (ctx: StoreContext, id: string): Promise<UserView> {
  const r = await ctx.redis.hgetall(ctx.keys.user(id))
  if (Object.keys(r).length === 0) throw new AdminError(`user "${id}" does not exist`, 'not_found')
  return userView(id, r)
}

function userView (id: string, r: Record<string, string>): UserView {
  return { id, org: r.org, role: r.role, status: r.status, name: r.name, email: r.email }
}
