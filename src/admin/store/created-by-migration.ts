/**
 * `keygate migrate created-by`: rewrites every untyped `created_by` (a bare user id) as
 * `user:<id>`, and drops BOT keys from the index set of an "owner" that is really an
 * actor (`cli:*`, `key:*`, `admin-token`). Idempotent; each key is its own small
 * transaction, so it can run while the gateway serves.
 */
import { ownerOf, readCreatedBy } from '../model/actors.js'
import { commit, type StoreContext } from './transactions.js'

async function indexedUnder (ctx: StoreContext, owner: string, id: string): Promise<boolean> {
  return await ctx.redis.sismember(ctx.keys.userKeys(owner), id) === 1
}

export async function migrateCreatedBy (ctx: StoreContext): Promise<{ rewritten: string[], unindexed: string[] }> {
  const ids = (await ctx.redis.smembers(ctx.keys.keys)).sort()
  const rewritten: string[] = []
  const unindexed: string[] = []
  for (const id of ids) {
    const [type, stored] = await ctx.redis.hmget(ctx.keys.key(id), 'type', 'created_by')
    if (stored === null || stored === undefined || stored === '') continue
    const typed = readCreatedBy(stored) as string
    const tx = ctx.redis.multi()
    let changes = 0
    if (typed !== stored) {
      tx.hset(ctx.keys.key(id), 'created_by', typed)
      rewritten.push(id)
      changes++
    } else if (type === 'bot' && ownerOf(typed) === undefined && await indexedUnder(ctx, stored, id)) {
      tx.srem(ctx.keys.userKeys(stored), id)
      unindexed.push(id)
      changes++
    }
    if (changes === 0) continue
    tx.xadd(...ctx.audit.changeArgs('key.migrate', `key:${id}`, 'ok', { created_by: typed }))
    await commit(tx)
  }
  return { rewritten, unindexed }
}
