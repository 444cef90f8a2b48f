/**
 * /users: list, show, put (create or update), deactivate, activate. An admin manages
 * every user; an org admin its own org's users (registry/admin/scope-rules.ts), and any
 * user of another org is 404 to it; a self principal may read its own user only.
 * Deactivation reports the BOT keys the user created, and revokes them in the same
 * change when the body asks (`revoke_created_keys`).
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { callerOf, requireScope, type ApiContext } from './context.js'
import {
  ActivateBody, DeactivateBody, ListUsersQuery, NoQuery, PutUserBody, UserList, UserParams, UserStatusChanged, UserViewSchema
} from './schemas.js'

export function userRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Querystring: Static<typeof ListUsersQuery> }>('/users', {
    onRequest: requireScope('org'),
    schema: { querystring: ListUsersQuery, response: { 200: UserList } }
  }, async (request) => {
    const { store, rules } = callerOf(ctx, request)
    const org = rules.orgFilter(request.query.org)
    return { users: org === null ? [] : await store.listUsers({ org }) }
  })

  app.get<{ Params: Static<typeof UserParams> }>('/users/:id', {
    schema: { params: UserParams, querystring: NoQuery, response: { 200: UserViewSchema } }
  }, async (request) => await callerOf(ctx, request).rules.visibleUser(request.params.id))

  app.put<{ Params: Static<typeof UserParams>, Body: Static<typeof PutUserBody> }>('/users/:id', {
    onRequest: requireScope('org'),
    schema: { params: UserParams, querystring: NoQuery, body: PutUserBody, response: { 200: UserViewSchema, 201: UserViewSchema } }
  }, async (request, reply) => {
    const { store, rules } = callerOf(ctx, request)
    const { id } = request.params
    await rules.checkPutUser(id, request.body)
    const { created } = await store.putUser(id, request.body)
    reply.code(created ? 201 : 200)
    return await store.showUser(id)
  })

  // deactivate, activate: the same change, to either status
  const statusRoute = (path: string, status: 'active' | 'deactivated', body: typeof DeactivateBody | typeof ActivateBody): void => {
    const action = status === 'active' ? 'user.activate' : 'user.deactivate'
    app.post<{ Params: Static<typeof UserParams>, Body: Static<typeof DeactivateBody> }>(path, {
      onRequest: requireScope('org'),
      schema: { params: UserParams, querystring: NoQuery, body, response: { 200: UserStatusChanged } }
    }, async (request) => {
      const { store, rules } = callerOf(ctx, request)
      const { id } = request.params
      if (!rules.isAdmin) await rules.manageableUser(id, action)
      const revoke = status === 'deactivated' ? { revokeCreatedKeys: request.body.revoke_created_keys } : {}
      const r = await store.setUserStatus(id, status, { ...revoke, inOrg: rules.orgFilter(undefined) ?? undefined })
      return { id, changed: r.changed, created_keys: r.createdKeys, revoked_keys: r.revokedKeys }
    })
  }
  statusRoute('/users/:id/deactivate', 'deactivated', DeactivateBody)
  statusRoute('/users/:id/activate', 'active', ActivateBody)
}
