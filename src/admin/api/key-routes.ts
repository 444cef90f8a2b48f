/**
 * /keys: list, create (the only response that ever holds a key), show, revoke,
 * rotate. An admin manages every key. A self principal manages its own user's keys:
 * it sees and revokes its user's personal keys and the BOT keys that user created
 * (any other key is 404 to it, existing or not); it creates personal keys for its
 * user, and BOT keys in its org with a role no broader than its own permissions.
 * Rotation is admin only.
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { AdminError, DEFAULT_GRACE_MS, ownsKey, type AdminStore, type CreateKeyInput, type KeyView as KeyRecordView } from '../../registry/admin-store.js'
import { principalOf, requireAdmin, selfUser, type ApiContext } from './context.js'
import { withinGrants, type Principal } from './principal.js'
import { badRequest, forbidden, notFound } from './refusal.js'
import { positive } from './validation.js'
import {
  Changed, CreatedKey, CreateKeyBody, EmptyBody, KeyList, KeyParams, KeyView, ListKeysQuery, NoQuery, RotatedKey, RotateKeyBody
} from './schemas.js'

export function keyRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Querystring: Static<typeof ListKeysQuery> }>('/keys', {
    schema: { querystring: ListKeysQuery, response: { 200: KeyList } }
  }, async (request) => {
    const p = principalOf(request)
    const q = request.query
    const unusedForMs = q.unused_for === undefined ? undefined : positive('unused_for', q.unused_for)
    const store = ctx.store(p)
    if (p.admin) return { keys: await store.listKeys({ user: q.user, org: q.org, unusedForMs }) }
    const { user } = selfUser(p)
    if (q.user !== undefined && q.user !== user) return { keys: [] }
    return { keys: await store.listKeys({ user, org: q.org, unusedForMs }) }
  })

  app.post<{ Body: Static<typeof CreateKeyBody> }>('/keys', {
    schema: { querystring: NoQuery, body: CreateKeyBody, response: { 201: CreatedKey } }
  }, async (request, reply) => {
    const p = principalOf(request)
    const store = ctx.store(p)
    const created = await store.createKey(await createInput(store, p, request.body))
    reply.code(201)
    return created
  })

  app.get<{ Params: Static<typeof KeyParams> }>('/keys/:id', {
    schema: { params: KeyParams, querystring: NoQuery, response: { 200: KeyView } }
  }, async (request) => {
    const p = principalOf(request)
    return await visibleKey(ctx.store(p), p, request.params.id, 'key.show')
  })

  app.post<{ Params: Static<typeof KeyParams> }>('/keys/:id/revoke', {
    schema: { params: KeyParams, querystring: NoQuery, body: EmptyBody, response: { 200: Changed } }
  }, async (request) => {
    const p = principalOf(request)
    const { id } = request.params
    const store = ctx.store(p)
    // (an admin's attempt on a missing key is audited by the store, as from the CLI)
    if (!p.admin) await visibleKey(store, p, id, 'key.revoke')
    const { changed } = await store.revokeKey(id)
    return { id, changed }
  })

  app.post<{ Params: Static<typeof KeyParams>, Body: Static<typeof RotateKeyBody> }>('/keys/:id/rotate', {
    onRequest: requireAdmin,
    schema: { params: KeyParams, querystring: NoQuery, body: RotateKeyBody, response: { 201: RotatedKey } }
  }, async (request, reply) => {
    const p = principalOf(request)
    const graceMs = request.body.grace === undefined ? DEFAULT_GRACE_MS : positive('grace', request.body.grace)
    const rotated = await ctx.store(p).rotateKey(request.params.id, graceMs)
    reply.code(201)
    return rotated
  })
}

/** The key, if `p` may see it; for a self principal, someone else's key is 404 like a missing one (ids cannot be probed). */
async function visibleKey (store: AdminStore, p: Principal, id: string, action: string): Promise<KeyRecordView> {
  const view = await store.showKey(id)
  if (p.admin) return view
  const { user } = selfUser(p)
  if (!ownsKey(user, view)) {
    if (action !== 'key.show') await store.recordDenied(action, `key:${id}`, `not a key of user ${user}`, view.org)
    throw notFound(`key ${id} is not a key of user ${user}`)
  }
  return view
}

/** The request's shape, then what the caller may create. */
async function createInput (store: AdminStore, p: Principal, b: Static<typeof CreateKeyBody>): Promise<CreateKeyInput> {
  const expiresInMs = b.expires_in === undefined ? undefined : positive('expires_in', b.expires_in)
  if (b.type === 'personal' && (b.role !== undefined || b.org !== undefined)) throw badRequest('a personal key takes its org and role from its user: no role or org')
  if (b.type === 'bot' && b.user !== undefined) throw badRequest('a BOT key has no user')

  if (p.admin) {
    if (b.type === 'personal' && b.user === undefined) throw badRequest('a personal key needs user')
    if (b.type === 'bot' && (b.role === undefined || b.org === undefined)) throw badRequest('a BOT key needs role and org')
    return { type: b.type, user: b.user, role: b.role, org: b.org, name: b.name, expiresInMs, createdBy: b.created_by }
  }

  const { p: me, user } = selfUser(p)
  if (b.created_by !== undefined && b.created_by !== user) {
    return await deny(store, `user:${b.created_by}`, `keygate:keys:self creates keys as its own user (${user}) only`, me.org)
  }
  if (b.type === 'personal') {
    if (b.user !== undefined && b.user !== user) {
      return await deny(store, `user:${b.user}`, `keygate:keys:self creates personal keys for its own user (${user}) only`, me.org)
    }
    return { type: 'personal', user, name: b.name, expiresInMs, createdBy: user }
  }
  if (b.role === undefined) throw badRequest('a BOT key needs role')
  const org = b.org ?? me.org
  if (org !== me.org) return await deny(store, `role:${b.role}`, `keygate:keys:self creates BOT keys in its own org (${me.org}) only`, me.org)
  // a role the caller may not see (missing, or broader than its grants) is refused alike
  const role = await store.showRole(b.role).catch((err: unknown) => {
    if (err instanceof AdminError && err.kind === 'not_found') return undefined
    throw err
  })
  if (role === undefined || !withinGrants(me.grants, role.permissions)) {
    return await deny(store, `role:${b.role}`, `role ${b.role} is not within the permissions of user ${user} (no escalation through a BOT key)`, me.org)
  }
  return { type: 'bot', role: b.role, org, name: b.name, expiresInMs, createdBy: user }
}

/** Audits the refused attempt (result `denied: ...`, under the caller's own org), then refuses it with 403. */
async function deny (store: AdminStore, target: string, why: string, org?: string): Promise<never> {
  await store.recordDenied('key.create', target, why, org)
  throw forbidden(why)
}
