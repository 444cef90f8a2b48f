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
import type { KeyView } from './views.js'

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

export async function listKeyPage (ctx: StoreContext, filter: KeyFilter, page: { limit: number, cursor?: string | undefined }, now = Date.now()): Promise<KeyPage> {
  const ids = (await ctx.redis.smembers(keyIndexOf(ctx, filter))).sort()
  const match = keyMatcher(filter, now)
  // a search or an age filter skips keys: read in chunks; otherwise just what the page needs
  const skipping = (filter.q !== undefined && filter.q !== '') || filter.unusedForMs !== undefined
  const found: KeyView[] = []
  let i = page.cursor === undefined ? 0 : firstAfter(ids, page.cursor)
  let scanned = 0
  while (i < ids.length && found.length <= page.limit) {
    if (scanned >= Math.max(MAX_SCAN, page.limit + 1)) {
      // the page is cut short: go on after the last key read
      await withLimitUse(ctx, found, now)
      return { keys: found, next_cursor: ids[i - 1] as string }
    }
    const want = page.limit + 1 - found.length
    const chunk = ids.slice(i, i + (skipping ? Math.max(want, CHUNK) : want))
    i += chunk.length
    scanned += chunk.length
    for (const view of await recordViews(ctx, chunk, now)) if (match(view)) found.push(view)
  }
  const keys = found.slice(0, page.limit)
  await withLimitUse(ctx, keys, now)
  return found.length > page.limit ? { keys, next_cursor: (keys[keys.length - 1] as KeyView).id } : { keys }
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
