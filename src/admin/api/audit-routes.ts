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
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import type { AuditQuery as StoreQuery } from '../../registry/audit-log.js'
import { principalOf, type ApiContext } from './context.js'
import { ADMIN_PERMISSION, type Principal } from './principal.js'
import { badRequest, sendForbidden } from './refusal.js'
import { AuditList, AuditQuery, RefusalList } from './schemas.js'
import { positive } from './validation.js'

export const ORG_ADMIN_PERMISSION = 'keygate:org:admin'
const DEFAULT_LIMIT = 100
const MAX_LIMIT = 1000

type Query = Static<typeof AuditQuery>

/** Which entries `p` may read: every one (`{}`), one org's, or none (undefined). */
export function auditScope (p: Principal): { org?: string } | undefined {
  if (p.admin) return {}
  if (p.kind === 'key' && p.grants.has(ORG_ADMIN_PERMISSION)) return { org: p.org }
  return undefined
}

/** Route hook, before the query is read: 403 for a caller who may read no entry. */
function requireAuditReader (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
  const p = request.adminApi.principal
  if (p !== undefined && auditScope(p) !== undefined) {
    done()
    return
  }
  request.adminApi.reason = 'missing_permission'
  request.adminApi.detail = 'the audit trail: admin or org admin only'
  sendForbidden(reply, ADMIN_PERMISSION)
}

export function auditRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Querystring: Query }>('/audit', {
    onRequest: requireAuditReader,
    schema: { querystring: AuditQuery, response: { 200: AuditList } }
  }, async (request) => {
    const p = principalOf(request)
    return await ctx.store(p).pageAudit(storeQuery(request, p))
  })

  app.get<{ Querystring: Query }>('/audit/refusals', {
    onRequest: requireAuditReader,
    schema: { querystring: AuditQuery, response: { 200: RefusalList } }
  }, async (request) => {
    const p = principalOf(request)
    return await ctx.store(p).readRefusals(storeQuery(request, p))
  })
}

function storeQuery (request: FastifyRequest<{ Querystring: Query }>, p: Principal): StoreQuery {
  // (requireAuditReader let the caller in)
  const scope = auditScope(p) ?? { org: '' }
  const q = request.query
  const limit = q.limit === undefined ? DEFAULT_LIMIT : Number(q.limit)
  if (limit > MAX_LIMIT) throw badRequest(`limit: at most ${MAX_LIMIT}`)
  return {
    limit,
    cursor: q.cursor,
    sinceMs: q.since === undefined ? undefined : positive('since', q.since),
    org: scope.org
  }
}
