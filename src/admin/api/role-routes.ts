/**
 * /roles: list, put (create or replace), delete. Admin only, except the list: an
 * org admin or a self principal sees the roles whose every permission it holds
 * itself, which is exactly what it may give a user or a BOT key.
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { actionsOf, requireAdmin, type ApiContext } from './context.js'
import { RoleViewSchema } from '../model/views.js'
import { DeleteRoleQuery, NoQuery, PutRoleBody, RoleDeleted, RoleList, RoleParams } from './schemas.js'

export function roleRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get('/roles', {
    schema: { summary: 'List roles', tags: ['roles'], querystring: NoQuery, response: { 200: RoleList } }
  }, async (request) => {
    return { roles: await actionsOf(ctx, request).listRoles() }
  })

  app.put<{ Params: Static<typeof RoleParams>, Body: Static<typeof PutRoleBody> }>('/roles/:name', {
    onRequest: requireAdmin,
    schema: {
      summary: 'Create or change a role',
      tags: ['roles'],
      params: RoleParams,
      querystring: NoQuery,
      body: PutRoleBody,
      response: { 200: RoleViewSchema }
    }
  }, async (request) => {
    const { name } = request.params
    return await actionsOf(ctx, request).putRole(
      name,
      request.body.permissions,
      request.body.description,
      request.body.rate_limit
    )
  })

  app.delete<{ Params: Static<typeof RoleParams>, Querystring: Static<typeof DeleteRoleQuery> }>('/roles/:name', {
    onRequest: requireAdmin,
    schema: {
      summary: 'Delete a role',
      tags: ['roles'],
      params: RoleParams,
      querystring: DeleteRoleQuery,
      response: { 200: RoleDeleted }
    }
  }, async (request) => {
    const { name } = request.params
    const { users, keys } = await actionsOf(ctx, request).deleteRole(name, request.query.force === 'true')
    return { name, users, keys }
  })
}
