/**
 * Leaked keys reported by anyone, on the data plane (`POST /_keygate/v1/leaked`,
 * src/data-plane/leak-reports.ts): the route has answered already and hands over only
 * the strings whose checksum holds; here they wait in one bounded queue and are looked
 * up one report at a time, off the request, so no answer's timing depends on what a
 * report holds. Each live key is revoked as every leak report revokes one
 * (src/admin/actions/leaks.ts): `leak_source public-report`, one audit entry
 * `key.leaked` by `scanner:public`, and the `key.leaked` event.
 *
 * At most `maxPending` keys wait; a report that would pass that is dropped whole (and
 * logged): a flood costs memory and Redis reads up to that bound, never more.
 */
import type { Logger } from 'pino'
import type { AdminActions } from '../actions/index.js'

/** what `leak_source` says of a key reported on the data plane */
export const PUBLIC_SOURCE = 'public-report'

export interface PublicReportsOptions {
  /** the admin actions of `scanner:public` (a full admin: a report holds the key, so it may revoke it) */
  actions: AdminActions
  logger: Logger
  maxPending: number
}

export interface PublicReports {
  /** queues the keys of one report (checksums checked); false when it was dropped */
  submit: (keys: readonly string[]) => boolean
  /** resolves once every queued report has been handled */
  drain: () => Promise<void>
}

export function publicReports ({ actions, logger, maxPending }: PublicReportsOptions): PublicReports {
  let pending = 0
  let tail: Promise<void> = Promise.resolve()

  async function handle (keys: readonly string[]): Promise<void> {
    try {
      const outcomes = await actions.reportLeaked(keys.map((token) => ({ token, source: PUBLIC_SOURCE })))
      const revoked = outcomes.flatMap((x) => x.revoked === true && x.id !== undefined ? [x.id] : [])
      if (revoked.length > 0) logger.info({ keys: keys.length, revoked }, 'public leak report')
    } catch (err) {
      // (the message only: a Redis error's command may hold key ids, never a key, but stays out all the same)
      logger.warn({ err: { message: (err as Error).message }, keys: keys.length }, 'public leak report failed')
    } finally {
      pending -= keys.length
    }
  }

  return {
    submit (keys) {
      if (keys.length === 0) return true
      if (pending + keys.length > maxPending) {
        logger.warn({ keys: keys.length, pending }, 'public leak report dropped: too many keys waiting')
        return false
      }
      pending += keys.length
      tail = tail.then(async () => { await handle(keys) })
      return true
    },
    async drain () {
      await tail
    }
  }
}
