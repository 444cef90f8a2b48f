/**
 * Keys a page at a time, in key id order, for registries of thousands of keys (the
 * console's Integrations page). A page reads the listing's index set (the org's, the
 * user's, or every key's: ids only), then the records of the keys after the cursor in
 * pipelined chunks until the page is full, and the limit use of the page's keys only.
 * A search (`q`) or `unusedForMs` may skip records: at most MAX_SCAN records are read
 * per page, so a page may hold fewer than `limit` keys and still carry `next_cursor`
 * (go on while it is present). The cursor is the last key id read: a key created or
 * revoked between pages neither shifts nor repeats the others.
 */
import { keyIndexOf, keyMatcher, recordViews, withLimitUse, type KeyFilter } from './keys.js'
import type { StoreContext } from './transactions.js'
import type { KeyView } from '../model/views.js'

/** keys per page: the default and the most */
export const KEY_PAGE_DEFAULT = 100
export const KEY_PAGE_MAX = 1000
/** the most key records one page reads (a search that skips many keys) */
export const MAX_SCAN = 2000
/** records per pipeline while a search skips keys */
const CHUNK = 500

export interface KeyPage {
  keys: KeyView[]
  /** the cursor of the next page; absent on the last */
  next_cursor?: string
}

export async function listKeyPage (
  ctx: StoreContext,
  filter: KeyFilter,
  page: { limit: number, cursor?: string | undefined },
  now = Date.now()
): Promise<KeyPage> {
  const ids = (await ctx.redis.smembers(keyIndexOf(ctx, filter))).sort()
  const start = page.cursor === undefined ? 0 : firstAfter(ids, page.cursor)
  const skipping = (filter.q !== undefined && filter.q !== '') || filter.unusedForMs !== undefined
  const { found, next } = skipping
    ? await scan(ctx, ids, start, filter, page.limit, now)
    : { found: await takeViews(ctx, ids, start, filter, page.limit + 1, now), next: undefined }
  const keys = found.slice(0, page.limit)
  // a search found the ids: now the page's records, as shown
  const views = skipping ? await recordViews(ctx, keys.map((k) => k.id), now) : keys as KeyView[]
  await withLimitUse(ctx, views, now)
  if (found.length > page.limit) return { keys: views, next_cursor: (keys[keys.length - 1] as MatchFields).id }
  return next === undefined ? { keys: views } : { keys: views, next_cursor: next }
}

/** Nothing skipped but stray index entries: the records as shown, `want` of them after `start`. */
async function takeViews (
  ctx: StoreContext,
  ids: string[],
  start: number,
  filter: KeyFilter,
  want: number,
  now: number
): Promise<KeyView[]> {
  const match = keyMatcher(filter, now)
  const found: KeyView[] = []
  for (let i = start; i < ids.length && found.length < want;) {
    const chunk = ids.slice(i, i + want - found.length)
    i += chunk.length
    for (const view of await recordViews(ctx, chunk, now)) if (match(view)) found.push(view)
  }
  return found
}

/** the fields a search and the scope look at (and the last use, for unused_for) */
const MATCH_FIELDS = ['type', 'org', 'user', 'role', 'name', 'created_by', 'created_at'] as const
type MatchFields = Parameters<ReturnType<typeof keyMatcher>>[0]

/**
 * A search: only the fields it matches, in pipelined chunks, until `limit + 1` keys
 * match or MAX_SCAN records are read; `next`: where to go on when cut short.
 */
async function scan (
  ctx: StoreContext,
  ids: string[],
  start: number,
  filter: KeyFilter,
  limit: number,
  now: number
): Promise<{ found: MatchFields[], next: string | undefined }> {
  const match = keyMatcher(filter, now)
  const found: MatchFields[] = []
  let i = start
  while (i < ids.length && found.length <= limit) {
    if (i - start >= Math.max(MAX_SCAN, limit + 1)) return { found, next: ids[i - 1] }
    const chunk = ids.slice(i, i + Math.max(limit + 1 - found.length, CHUNK))
    i += chunk.length
    const pipeline = ctx.redis.pipeline()
    for (const id of chunk) pipeline.hmget(ctx.keys.key(id), ...MATCH_FIELDS)
    if (filter.unusedForMs !== undefined) pipeline.hmget(ctx.keys.usage, ...chunk)
    const replies = await pipeline.exec() ?? []
    // a failed read (a command timeout) fails the page: a key is never skipped for it
    for (const [err] of replies) if (err !== null) throw err
    const lastUse = (replies[chunk.length]?.[1] ?? []) as Array<string | null>
    chunk.forEach((id, j) => {
      const values = replies[j]?.[1] ?? []
      const key: Record<string, string> = { id }
      MATCH_FIELDS.forEach((field, f) => {
        const v = (values as Array<string | null>)[f]
        if (v !== null && v !== undefined && v !== '') key[field] = v
      })
      const used = lastUse[j]
      if (used !== null && used !== undefined) key.last_used_at = used
      const fields = key as unknown as MatchFields
      if (key.type !== undefined && key.org !== undefined && match(fields)) found.push(fields)
    })
  }
  return { found, next: undefined }
}

/** The index of the first id after `cursor` in sorted `ids` (the cursor's key may be gone). */
function firstAfter (ids: string[], cursor: string): number {
  let lo = 0
  let hi = ids.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if ((ids[mid] as string) <= cursor) lo = mid + 1
    else hi = mid
  }
  return lo
}
