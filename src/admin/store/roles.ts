/**
 * Role records: a name, its permissions, a description and a rate limit; listed as Redis holds them
 * (record-names.ts).
 */
import type { ChainableCommander } from 'ioredis'
import { AdminError } from '../model/errors.js'
import { roleViewOf, type RoleView } from '../model/views.js'
import { recordNames } from './record-names.js'
import { hgetallMany, type StoreContext } from './transactions.js'

export async function listRoles (ctx: StoreContext): Promise<RoleView[]> {
  const names = await recordNames(ctx.redis, ctx.keys, 'role')
  const records = await hgetallMany(ctx.redis, names.map((n) => ctx.keys.role(n)))
  return names.flatMap((name, i) => {
    const r = records[i]
    if (r === undefined || Object.keys(r).length === 0) return []
    return [roleViewOf(name, r)]
  })
}

export async function showRole (ctx: StoreContext, name: string): Promise<RoleView> {
  const r = await ctx.redis.hgetall(ctx.keys.role(name))
  if (Object.keys(r).length === 0) throw new AdminError(`role "${name}" does not exist`, 'not_found')
  return roleViewOf(name, r)
}

/** Writes a role's fields and its index entry into `tx`; `removeLimit`: its rate limit goes. */
export function putRole (
  ctx: StoreContext,
  tx: ChainableCommander,
  name: string,
  fields: Record<string,
  string>,
  removeLimit: boolean
): void {
  tx.hset(ctx.keys.role(name), fields)
  if (removeLimit) tx.hdel(ctx.keys.role(name), 'rate_limit')
  tx.sadd(ctx.keys.roles, name)
}

export function deleteRole (ctx: StoreContext, tx: ChainableCommander, name: string): void {
  tx.del(ctx.keys.role(name)).srem(ctx.keys.roles, name)
}
