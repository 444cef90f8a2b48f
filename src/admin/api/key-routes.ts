/**
 * /keys: list, create (the only response that ever holds a key), show, revoke,
 * rotate, and the key's own rate limit (admin only). Who may touch which key is decided by the admin rules
 * (registry/admin/scope-rules.ts): an admin every key; an org admin its org's keys; a
 * self principal its own user's keys. A key outside the caller's scope is 404,
 * existing or not.
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { DEFAULT_GRACE_MS } from '../../registry/admin/index.js'
import { callerOf, principalOf, requireAdmin, type ApiContext } from './context.js'
import { positive } from './validation.js'
import {
  Changed, CreatedKeySchema, CreateKeyBody, EmptyBody, KeyLimitBody, KeyList, KeyParams, KeyViewSchema, ListKeysQuery, NoQuery, RotatedKeySchema, RotateKeyBody
} from './schemas.js'

export function keyRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Querystring: Static<typeof ListKeysQuery> }>('/keys', {
    schema: { querystring: ListKeysQuery, response: { 200: KeyList } }
  }, async (request) => {
    const { store, rules } = callerOf(ctx, request)
    const q = request.query
    const unusedForMs = q.unused_for === undefined ? undefined : positive('unused_for', q.unused_for)
    const org = rules.orgFilter(q.org)
    const user = rules.keyUserFilter(q.user)
    if (org === null || user === null) return { keys: [] }
    return { keys: await store.listKeys({ user, org, unusedForMs }) }
  })

  app.post<{ Body: Static<typeof CreateKeyBody> }>('/keys', {
    schema: { querystring: NoQuery, body: CreateKeyBody, response: { 201: CreatedKeySchema } }
  }, async (request, reply) => {
    const { store, rules } = callerOf(ctx, request)
    const b = request.body
    const input = await rules.keyToCreate({
      type: b.type,
      user: b.user,
      role: b.role,
      org: b.org,
      name: b.name,
      expiresInMs: b.expires_in === undefined ? undefined : positive('expires_in', b.expires_in),
      createdBy: b.created_by,
      rateLimit: b.rate_limit
    })
    const created = await store.createKey(input)
    reply.code(201)
    return created
  })

  app.get<{ Params: Static<typeof KeyParams> }>('/keys/:id', {
    schema: { params: KeyParams, querystring: NoQuery, response: { 200: KeyViewSchema } }
  }, async (request) => await callerOf(ctx, request).rules.visibleKey(request.params.id))

  app.post<{ Params: Static<typeof KeyParams> }>('/keys/:id/revoke', {
    schema: { params: KeyParams, querystring: NoQuery, body: EmptyBody, response: { 200: Changed } }
  }, async (request) => {
    const { store, rules } = callerOf(ctx, request)
    const { id } = request.params
    // (an admin's attempt on a missing key is audited by the store, as from the CLI)
    if (!rules.isAdmin) await rules.manageableKey(id, 'key.revoke')
    const { changed } = await store.revokeKey(id)
    return { id, changed }
  })

  app.post<{ Params: Static<typeof KeyParams>, Body: Static<typeof KeyLimitBody> }>('/keys/:id/limit', {
    onRequest: requireAdmin,
    schema: { params: KeyParams, querystring: NoQuery, body: KeyLimitBody, response: { 200: Changed } }
  }, async (request) => {
    const { id } = request.params
    const { changed } = await ctx.store(principalOf(request)).setKeyLimit(id, request.body.rate_limit)
    return { id, changed }
  })

  app.post<{ Params: Static<typeof KeyParams>, Body: Static<typeof RotateKeyBody> }>('/keys/:id/rotate', {
    schema: { params: KeyParams, querystring: NoQuery, body: RotateKeyBody, response: { 201: RotatedKeySchema } }
  }, async (request, reply) => {
    const { store, rules } = callerOf(ctx, request)
    const { id } = request.params
    const graceMs = request.body.grace === undefined ? DEFAULT_GRACE_MS : positive('grace', request.body.grace)
    if (!rules.isAdmin) await rules.manageableKey(id, 'key.rotate')
    const rotated = await store.rotateKey(id, graceMs, { botMaxTtlMs: rules.botMaxTtlMs })
    reply.code(201)
    return rotated
  })
}
