/** Roles: a name, its permissions, a description and a rate limit; listed through the roles index set. */
import { listKeys } from './keys.js'
import { AdminError } from '../model/errors.js'
import { checkName, checkPermissions, checkRateLimit } from '../policy/rules.js'
import { audited, commit, hgetallMany, type StoreContext } from './transactions.js'
import { listUsers } from './users.js'
import type { RoleView } from '../model/views.js'

/**
 * Creates or replaces a role. A description or rate limit not given is kept as it
 * is; `rateLimit: null` removes the role's limit.
 */
export async function putRole (ctx: StoreContext, name: string, permissions: string[], description?: string, rateLimit?: string | null): Promise<void> {
  await audited(ctx, 'role.put', `role:${name}`, async () => {
    checkName('role', name)
    checkPermissions(permissions)
    if (typeof rateLimit === 'string') checkRateLimit(rateLimit)
    const fields: Record<string, string> = { permissions: permissions.join(' ') }
    if (description !== undefined) fields.description = description
    if (typeof rateLimit === 'string') fields.rate_limit = rateLimit
    const tx = ctx.redis.multi().hset(ctx.keys.role(name), fields)
    if (rateLimit === null) tx.hdel(ctx.keys.role(name), 'rate_limit')
    await commit(tx
      .sadd(ctx.keys.roles, name)
      .xadd(...ctx.audit.changeArgs('role.put', `role:${name}`, 'ok', rateLimit === null ? { ...fields, rate_limit: '' } : fields)))
  })
}

export async function listRoles (ctx: StoreContext): Promise<RoleView[]> {
  const names = (await ctx.redis.smembers(ctx.keys.roles)).sort()
  const records = await hgetallMany(ctx.redis, names.map((n) => ctx.keys.role(n)))
  return names.flatMap((name, i) => {
    const r = records[i]
    if (r === undefined || Object.keys(r).length === 0) return []
    return [roleView(name, r)]
  })
}

export async function showRole (ctx: StoreContext, name: string): Promise<RoleView> {
  const r = await ctx.redis.hgetall(ctx.keys.role(name))
  if (Object.keys(r).length === 0) throw new AdminError(`role "${name}" does not exist`, 'not_found')
  return roleView(name, r)
}

/** Refuses while users or BOT keys reference the role, naming them, unless `force`. */
export async function deleteRole (ctx: StoreContext, name: string, force: boolean): Promise<{ users: string[], keys: string[] }> {
  return await audited(ctx, 'role.delete', `role:${name}`, async () => {
    if (await ctx.redis.exists(ctx.keys.role(name)) === 0) throw new AdminError(`role "${name}" does not exist`, 'not_found')
    const users = (await listUsers(ctx)).filter((u) => u.role === name).map((u) => u.id)
    const keys = (await listKeys(ctx)).filter((k) => k.type === 'bot' && k.role === name && k.status === 'active').map((k) => k.id)
    if ((users.length > 0 || keys.length > 0) && !force) {
      throw new AdminError(`role "${name}" is still used by ${describeRefs(users, keys)}; reassign them, or force the deletion (they will then have no permissions)`, 'conflict')
    }
    await commit(ctx.redis.multi()
      .del(ctx.keys.role(name))
      .srem(ctx.keys.roles, name)
      .xadd(...ctx.audit.changeArgs('role.delete', `role:${name}`, 'ok', { force: String(force), users: users.join(' '), keys: keys.join(' ') })))
    return { users, keys }
  })
}

function roleView (name: string, r: Record<string, string>): RoleView {
  const view: RoleView = { name, permissions: (r.permissions ?? '').split(/\s+/).filter((p) => p !== '') }
  if (r.description !== undefined) view.description = r.description
  if (r.rate_limit !== undefined && r.rate_limit !== '') view.rate_limit = r.rate_limit
  return view
}

function describeRefs (users: string[], keys: string[]): string {
  const parts: string[] = []
  if (users.length > 0) parts.push(`users ${users.join(', ')}`)
  if (keys.length > 0) parts.push(`BOT keys ${keys.join(', ')}`)
  return parts.join(' and ')
}
