/**
 * The audit trail, a page at a time, newest first (docs/admin-api.md):
 *
 *   GET /audit            changes
 *   GET /audit/refusals   refused attempts, aggregated per principal, action, org and minute
 *
 * `?since=24h&limit=100&cursor=<next_cursor>`. An admin reads every entry; an org
 * admin (`keygate:org:admin`) only those of its own org; anyone else gets 403.
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AdminStore, AuditQuery as StoreQuery } from '../store/index.js'
import { principalOf, requireScope, type ApiContext } from './context.js'
import type { Principal } from './principal.js'
import { badRequest } from './refusal.js'
import { AuditList, AuditQuery, RefusalList } from './schemas.js'
import { positive } from './validation.js'

const DEFAULT_LIMIT = 100
const MAX_LIMIT = 1000

type Query = Static<typeof AuditQuery>

export function auditRoutes (app: FastifyInstance, ctx: ApiContext): void {
  // the two listings differ only in what they read
  const listing = (path: string, summary: string, response: typeof AuditList | typeof RefusalList, read: (store: AdminStore, q: StoreQuery) => Promise<unknown>): void => {
    // (a self principal is refused before the query is read)
    app.get<{ Querystring: Query }>(path, {
      onRequest: requireScope('org'),
      schema: { summary, tags: ['audit'], querystring: AuditQuery, response: { 200: response } }
    }, async (request) => {
      const p = principalOf(request)
      return await read(ctx.store(p), storeQuery(request, p))
    })
  }
  listing('/audit', 'Page through the audit trail of changes, newest first', AuditList, async (store, q) => await store.pageAudit(q))
  listing('/audit/refusals', 'Page through the refusals, aggregated, newest first', RefusalList, async (store, q) => await store.readRefusals(q))
}

function storeQuery (request: FastifyRequest<{ Querystring: Query }>, p: Principal): StoreQuery {
  const q = request.query
  const limit = q.limit === undefined ? DEFAULT_LIMIT : Number(q.limit)
  if (limit > MAX_LIMIT) throw badRequest(`limit: at most ${MAX_LIMIT}`)
  return {
    limit,
    cursor: q.cursor,
    sinceMs: q.since === undefined ? undefined : positive('since', q.since),
    // an org admin reads its own org's entries only
    org: p.scope === 'admin' ? undefined : p.org
  }
}
