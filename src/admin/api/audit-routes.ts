/**
 * The audit trail, a page at a time, newest first (docs/admin-api.md):
 *
 *   GET /audit            changes
 *   GET /audit/refusals   refused attempts, aggregated per principal, action, org and minute
 *
 * `?since=24h&limit=100&cursor=<next_cursor>`. An admin reads every entry; an org
 * admin (`keygate:org:admin`) only those of its own org (the actions filter them);
 * anyone else gets 403.
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { AdminActions, AuditQuery as Query } from '../actions/index.js'
import { actionsOf, requireScope, type ApiContext } from './context.js'
import { badRequest } from './refusal.js'
import { AuditList, AuditQuery, RefusalList } from './schemas.js'
import { positive } from './validation.js'

const DEFAULT_LIMIT = 100
const MAX_LIMIT = 1000

type QueryString = Static<typeof AuditQuery>

export function auditRoutes (app: FastifyInstance, ctx: ApiContext): void {
  // the two listings differ only in what they read
  const listing = (
    path: string,
    summary: string,
    response: typeof AuditList | typeof RefusalList,
    read: (actions: AdminActions, q: Query) => Promise<unknown>
  ): void => {
    // (a self principal is refused before the query is read)
    app.get<{ Querystring: QueryString }>(path, {
      onRequest: requireScope('org'),
      schema: { summary, tags: ['audit'], querystring: AuditQuery, response: { 200: response } }
    }, async (request) => await read(actionsOf(ctx, request), queryOf(request)))
  }
  listing(
    '/audit',
    'Page through the audit trail of changes, newest first',
    AuditList,
    async (actions, q) => await actions.pageAudit(q)
  )
  listing(
    '/audit/refusals',
    'Page through the refusals, aggregated, newest first',
    RefusalList,
    async (actions, q) => await actions.readRefusals(q)
  )
}

function queryOf (request: FastifyRequest<{ Querystring: QueryString }>): Query {
  const q = request.query
  const limit = q.limit === undefined ? DEFAULT_LIMIT : Number(q.limit)
  if (limit > MAX_LIMIT) throw badRequest(`limit: at most ${MAX_LIMIT}`)
  return { limit, cursor: q.cursor, sinceMs: q.since === undefined ? undefined : positive('since', q.since) }
}
