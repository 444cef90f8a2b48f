/**
 * /orgs: org records (a display name and the rate limit every key of the org shares),
 * each with its limit's use now; with `in_use=true`, every org named on a user or key too.
 * Put: admin only (an org's own admin cannot raise its limit). Read: an admin every org;
 * an org admin its own org; another org is 404.
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { actionsOf, requireAdmin, requireScope, type ApiContext } from './context.js'
import { OrgViewSchema } from '../model/views.js'
import { ListOrgsQuery, NoQuery, OrgList, OrgParams, PutOrgBody } from './schemas.js'

export function orgRoutes (app: FastifyInstance, ctx: ApiContext): void {
  // in_use=true: also the orgs named on users or keys that have no record
  app.get<{ Querystring: Static<typeof ListOrgsQuery> }>('/orgs', {
    onRequest: requireScope('org'),
    schema: { summary: 'List orgs', tags: ['orgs'], querystring: ListOrgsQuery, response: { 200: OrgList } }
  }, async (request) => {
    return { orgs: await actionsOf(ctx, request).listOrgs({ inUse: request.query.in_use === 'true' }) }
  })

  app.get<{ Params: Static<typeof OrgParams> }>('/orgs/:org', {
    onRequest: requireScope('org'),
    schema: {
      summary: 'Show an org (limits, key policy)',
      tags: ['orgs'],
      params: OrgParams,
      querystring: NoQuery,
      response: { 200: OrgViewSchema }
    }
  }, async (request) => {
    return await actionsOf(ctx, request).showOrg(request.params.org)
  })

  app.put<{ Params: Static<typeof OrgParams>, Body: Static<typeof PutOrgBody> }>('/orgs/:org', {
    onRequest: requireAdmin,
    schema: {
      summary: 'Create or change an org',
      tags: ['orgs'],
      params: OrgParams,
      querystring: NoQuery,
      body: PutOrgBody,
      response: { 200: OrgViewSchema }
    }
  }, async (request) => {
    return await actionsOf(ctx, request).putOrg(
      request.params.org,
      { name: request.body.name, rateLimit: request.body.rate_limit, keyMaxTtl: request.body.key_max_ttl }
    )
  })
}
