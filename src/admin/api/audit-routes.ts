/** GET /audit?since=24h: the audit trail of changes made through the CLI and this API (admin only). */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { principalOf, requireAdmin, type ApiContext } from './context.js'
import { AuditList, AuditQuery } from './schemas.js'
import { positive } from './validation.js'

export function auditRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Querystring: Static<typeof AuditQuery> }>('/audit', {
    onRequest: requireAdmin,
    schema: { querystring: AuditQuery, response: { 200: AuditList } }
  }, async (request) => {
    const sinceMs = request.query.since === undefined ? undefined : positive('since', request.query.since)
    return { entries: await ctx.store(principalOf(request)).readAudit(sinceMs) }
  })
}
