/**
 * Leaked keys reported by a scanner (the CLI, the admin API, GitHub's secret scanning
 * hook): each reported token that is a live key (store/leaks.ts finds it) is decided
 * (policy/leaks.ts) and, when the reporter may, revoked in one change of its own with
 * `revoked_reason leaked`, `leak_source` and one audit entry `key.leaked`. Push
 * invalidation then drops the record from every gateway's cache and closes the key's
 * open WebSockets (src/cache/invalidation.ts, src/websocket/); the audit entry is the
 * `key.leaked` webhook event (src/webhooks/audit-events.ts). A token that is no key,
 * or whose key the caller may not see, is a false positive, revealing nothing.
 */
import { isoTimestamp } from '../../registry/records.js'
import { checkLeakReporter, leakSource, leakVerdict, type LeakOutcome, type LeakReport } from '../policy/leaks.js'
import { setKeyFields } from '../store/keys.js'
import { liveKeyId } from '../store/leaks.js'
import { watching } from '../store/transactions.js'
import type { Fields } from '../model/snapshot.js'
import type { ActionContext } from './context.js'

export type { LeakLabel, LeakOutcome, LeakReport } from '../policy/leaks.js'

/** A label per report, in order (each key read under WATCH and revoked in its own transaction). */
export async function reportLeaked (
  a: ActionContext,
  reports: readonly LeakReport[],
  now = Date.now()
): Promise<LeakOutcome[]> {
  checkLeakReporter(a.scope)
  return await watching(a.store, async (w) => {
    const out: LeakOutcome[] = []
    for (const { token, source } of reports) {
      const id = await liveKeyId(a.store, token)
      const record = id === undefined ? undefined : (await w.read({ keys: [id] })).keys.get(id)
      const verdict = leakVerdict(a.scope, record)
      if (id === undefined || record === undefined || verdict !== 'revoke') {
        await w.unwatch()
        out.push(id === undefined || verdict === 'false_positive'
          ? { label: 'false_positive' }
          : {
              label: 'true_positive',
              id,
              revoked: false,
              ...envOf(record)
            })
        continue
      }
      const where = leakSource(source, a.store.keyPrefix)
      const tx = w.multi()
      setKeyFields(
        a.store,
        tx,
        id,
        { status: 'revoked', revoked_at: isoTimestamp(now), revoked_reason: 'leaked', leak_source: where }
      )
      tx.xadd(...a.store.audit.changeArgs(
        'key.leaked',
        `key:${id}`,
        'ok',
        { from: record.status as string, leak_source: where, env: record.env === 'test' ? 'test' : 'live' },
        record.org
      ))
      await w.commit(tx)
      out.push({ label: 'true_positive', id, revoked: true, ...envOf(record) })
    }
    return out
  })
}

/** a test key's outcome says so (a live key's says nothing more) */
function envOf (record: Fields | undefined): { env?: 'test' } {
  return record?.env === 'test' ? { env: 'test' } : {}
}
