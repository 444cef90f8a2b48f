/**
 * /users: list, show, put (create or update), deactivate, activate. An admin manages
 * every user; an org admin its own org's users (src/admin/policy/scope-rules.ts), and any
 * user of another org is 404 to it; a self principal may read its own user only.
 * Deactivation reports the BOT keys the user created, and revokes them in the same
 * change when the body asks (`revoke_created_keys`).
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { actionsOf, requireScope, type ApiContext } from './context.js'
import { withWarnings } from './refusal.js'
import { UserViewSchema } from '../model/views.js'
import {
  ActivateBody, DeactivateBody, ListUsersQuery, NoQuery, PutUserBody, PutUserResponse, UserList, UserParams,
  UserStatusChanged
} from './schemas.js'

export function userRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Querystring: Static<typeof ListUsersQuery> }>('/users', {
    onRequest: requireScope('org'),
    schema: { summary: 'List users', tags: ['users'], querystring: ListUsersQuery, response: { 200: UserList } }
  }, async (request) => {
    return { users: await actionsOf(ctx, request).listUsers({ org: request.query.org }) }
  })

  app.get<{ Params: Static<typeof UserParams> }>('/users/:id', {
    schema: {
      summary: 'Show a user',
      tags: ['users'],
      params: UserParams,
      querystring: NoQuery,
      response: { 200: UserViewSchema }
    }
  }, async (request) => await actionsOf(ctx, request).showUser(request.params.id))

  app.put<{ Params: Static<typeof UserParams>, Body: Static<typeof PutUserBody> }>('/users/:id', {
    onRequest: requireScope('org'),
    schema: {
      summary: 'Create or change a user',
      tags: ['users'],
      params: UserParams,
      querystring: NoQuery,
      body: PutUserBody,
      response: { 200: PutUserResponse, 201: PutUserResponse }
    }
  }, async (request, reply) => {
    const actions = actionsOf(ctx, request)
    const { id } = request.params
    const { result, warnings } = await actions.putUser(id, request.body)
    reply.code(result.created ? 201 : 200)
    return withWarnings(await actions.showUser(id), warnings)
  })

  // deactivate, activate: the same change, to either status
  const statusRoute = (
    path: string,
    status: 'active' | 'deactivated',
    body: typeof DeactivateBody | typeof ActivateBody,
    summary: string
  ): void => {
    app.post<{ Params: Static<typeof UserParams>, Body: Static<typeof DeactivateBody> }>(path, {
      onRequest: requireScope('org'),
      schema: {
        summary,
        tags: ['users'],
        params: UserParams,
        querystring: NoQuery,
        body,
        response: { 200: UserStatusChanged }
      }
    }, async (request) => {
      const { id } = request.params
      const r = await actionsOf(ctx, request).setUserStatus(
        id,
        status,
        { revokeCreatedKeys: request.body.revoke_created_keys }
      )
      return { id, changed: r.changed, created_keys: r.createdKeys, revoked_keys: r.revokedKeys }
    })
  }
  statusRoute(
    '/users/:id/deactivate',
    'deactivated',
    DeactivateBody,
    'Deactivate a user (every key of theirs stops working)'
  )
  statusRoute('/users/:id/activate', 'active', ActivateBody, 'Activate a user again')
}
