/**
 * /users: list, show, put (create or update), deactivate, activate. Admin only,
 * except that a self principal may read its own user (any other user is 404 to it).
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { principalOf, requireAdmin, selfUser, type ApiContext } from './context.js'
import { notFound } from './refusal.js'
import { Changed, EmptyBody, ListUsersQuery, NoQuery, PutUserBody, UserList, UserParams, UserView } from './schemas.js'

export function userRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Querystring: Static<typeof ListUsersQuery> }>('/users', {
    onRequest: requireAdmin,
    schema: { querystring: ListUsersQuery, response: { 200: UserList } }
  }, async (request) => ({ users: await ctx.store(principalOf(request)).listUsers({ org: request.query.org }) }))

  app.get<{ Params: Static<typeof UserParams> }>('/users/:id', {
    schema: { params: UserParams, querystring: NoQuery, response: { 200: UserView } }
  }, async (request) => {
    const p = principalOf(request)
    const { id } = request.params
    if (!p.admin && selfUser(p).user !== id) throw notFound(`user ${id} is not the caller's own user`)
    return await ctx.store(p).showUser(id)
  })

  app.put<{ Params: Static<typeof UserParams>, Body: Static<typeof PutUserBody> }>('/users/:id', {
    onRequest: requireAdmin,
    schema: { params: UserParams, querystring: NoQuery, body: PutUserBody, response: { 200: UserView, 201: UserView } }
  }, async (request, reply) => {
    const store = ctx.store(principalOf(request))
    const { id } = request.params
    const { created } = await store.putUser(id, request.body)
    reply.code(created ? 201 : 200)
    return await store.showUser(id)
  })

  for (const [action, status] of [['deactivate', 'deactivated'], ['activate', 'active']] as const) {
    app.post<{ Params: Static<typeof UserParams> }>(`/users/:id/${action}`, {
      onRequest: requireAdmin,
      schema: { params: UserParams, querystring: NoQuery, body: EmptyBody, response: { 200: Changed } }
    }, async (request) => {
      const { id } = request.params
      const { changed } = await ctx.store(principalOf(request)).setUserStatus(id, status)
      return { id, changed }
    })
  }
}
