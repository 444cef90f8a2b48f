/**
 * /keys: list (all at once, or a page at a time with `limit`/`cursor`, searched with `q`:
 * src/admin/store/key-pages.ts), create (the only response that ever holds a key), show,
 * revoke, rotate, restrict (scope and addresses), the key's own rate limit (admin only),
 * leaked keys reported by a scanner (the only request body that holds keygate keys;
 * an org admin's report revokes only the keys it sees), and keys imported from another
 * system (a body of foreign keys, hashed as read: docs/imports.md). Every read and write
 * is one admin action (src/admin/actions/). Who may touch which key is the policy's
 * (src/admin/policy/scope-rules.ts): an admin every key; an org admin its org's keys; a
 * self principal its own user's keys. A key outside the caller's scope is 404,
 * existing or not.
 */
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { createHash } from 'node:crypto'
import { importRefused, readImportRecords } from '../actions/index.js'
import { AdminError } from '../model/errors.js'
import { DEFAULT_GRACE_MS, KEY_PAGE_DEFAULT, KEY_PAGE_MAX } from '../model/limits.js'
import { actionsOf, requireAdmin, requireScope, type ApiContext } from './context.js'
import { badField, withWarnings } from './refusal.js'
import { positive, recordsBodyValidator } from './validation.js'
import { keyPrefixesOf } from '../../registry/key-format.js'
import { KeyViewSchema, RotatedKeySchema } from '../model/views.js'
import {
  Changed, CreatedKeyResponse, CreateKeyBody, EmptyBody, ImportedKeysResponse, ImportKeysBody, ImportKeysBodyOuter,
  KeyLimitBody, LeakedKeysBody, LeakedKeysResponse, KeyList, KeyParams, ListKeysQuery, NoQuery, RestrictKeyBody,
  RotateKeyBody
} from './schemas.js'

/** an import's body, at most (1,000 records of the longest key and names fit) */
export const IMPORT_BODY_MAX = 1024 * 1024

export function keyRoutes (app: FastifyInstance, ctx: ApiContext): void {
  const keyPrefix = keyPrefixesOf(ctx.config.keys)
  app.get<{ Querystring: Static<typeof ListKeysQuery> }>('/keys', {
    schema: {
      summary: 'List keys (by org, user, unused for, over the org\'s key policy)',
      tags: ['keys'],
      querystring: ListKeysQuery,
      response: { 200: KeyList }
    }
  }, async (request) => {
    const actions = actionsOf(ctx, request)
    const q = request.query
    const unusedForMs = q.unused_for === undefined ? undefined : positive('unused_for', q.unused_for)
    const filter = actions.scopedKeyFilter({ user: q.user, org: q.org, unusedForMs, q: q.q })
    if (filter === null) return { keys: [] }
    const paged = q.limit !== undefined || q.cursor !== undefined
    if (q.over_policy === 'true') {
      const org = filter.org
      if (org === undefined) {
        throw new AdminError(
          'over_policy needs an org',
          'invalid',
          undefined,
          [{ field: 'org', reason: 'over_policy lists one org\'s keys: give org' }]
        )
      }
      if (paged || q.q !== undefined) {
        throw badField(
          q.q !== undefined ? 'q' : q.limit !== undefined ? 'limit' : 'cursor',
          'over_policy lists every such key at once'
        )
      }
      return { keys: await actions.keysOverPolicy({ org, user: filter.user }) }
    }
    // without limit or cursor: every key at once (the CLI, scripts); with either: one page
    if (!paged) return { keys: await actions.listKeys(filter) }
    const limit = q.limit === undefined ? KEY_PAGE_DEFAULT : Number(q.limit)
    if (limit > KEY_PAGE_MAX) throw badField('limit', `at most ${KEY_PAGE_MAX}`)
    return await actions.keyPage(filter, { limit, cursor: q.cursor })
  })

  app.post<{ Body: Static<typeof CreateKeyBody> }>('/keys', {
    schema: {
      summary: 'Create a key (the plaintext is in this answer only)',
      tags: ['keys'],
      querystring: NoQuery,
      body: CreateKeyBody,
      response: { 201: CreatedKeyResponse }
    }
  }, async (request, reply) => {
    const b = request.body
    const { result, warnings } = await actionsOf(ctx, request).createKey({
      type: b.type,
      user: b.user,
      role: b.role,
      org: b.org,
      name: b.name,
      expiresInMs: b.expires_in === undefined ? undefined : positive('expires_in', b.expires_in),
      createdBy: b.created_by,
      rateLimit: b.rate_limit,
      quota: b.quota,
      credits: b.credits,
      scope: b.scope,
      allowedCidrs: b.allowed_cidrs,
      env: b.env,
      identity: b.identity,
      meta: b.meta
    })
    reply.code(201)
    return withWarnings(result, warnings)
  })

  app.post<{ Body: Static<typeof LeakedKeysBody> }>('/keys/leaked', {
    onRequest: requireScope('org'),
    config: { takesKeys: true },
    schema: {
      summary: 'Revoke keys reported as leaked',
      tags: ['keys'],
      querystring: NoQuery,
      body: LeakedKeysBody,
      response: { 200: LeakedKeysResponse }
    }
  }, async (request) => {
    const { keys, source } = request.body
    const outcomes = await actionsOf(ctx, request).reportLeaked(keys.map((token) => ({ token, source })))
    return {
      results: keys.map((token, i) => {
        const o = outcomes[i]
        const tokenHash = createHash('sha256').update(token).digest('hex')
        if (o?.id === undefined) return { token_hash: tokenHash, label: 'false_positive' as const }
        return { token_hash: tokenHash, label: o.label, id: o.id, ...(o.env === undefined ? {} : { env: o.env }) }
      }),
      revoked: outcomes.filter((o) => o.revoked === true).length
    }
  })

  // the one request body that holds foreign keys in the clear: hashed as they are read, never kept or logged
  app.post<{ Body: unknown[] }>('/keys/import', {
    onRequest: requireScope('org'),
    bodyLimit: IMPORT_BODY_MAX,
    validatorCompiler: recordsBodyValidator(keyPrefix, ImportKeysBodyOuter),
    schema: {
      summary: 'Import keys from another system (plaintext or SHA-256), all or none',
      tags: ['keys'],
      querystring: NoQuery,
      body: ImportKeysBody,
      response: { 201: ImportedKeysResponse }
    }
  }, async (request, reply) => {
    const { inputs, problems } = readImportRecords(request.body, keyPrefix)
    if (problems.length > 0) throw importRefused(problems)
    const { result, warnings } = await actionsOf(ctx, request).importKeys(inputs)
    reply.code(201)
    return withWarnings(
      { keys: result.map((k) => ({ index: k.line, id: k.id, type: k.type, org: k.org, name: k.name })) },
      warnings
    )
  })

  app.get<{ Params: Static<typeof KeyParams> }>('/keys/:id', {
    schema: {
      summary: 'Show a key',
      tags: ['keys'],
      params: KeyParams,
      querystring: NoQuery,
      response: { 200: KeyViewSchema }
    }
  }, async (request) => await actionsOf(ctx, request).showKey(request.params.id))

  app.post<{ Params: Static<typeof KeyParams> }>('/keys/:id/revoke', {
    schema: {
      summary: 'Revoke a key',
      tags: ['keys'],
      params: KeyParams,
      querystring: NoQuery,
      body: EmptyBody,
      response: { 200: Changed }
    }
  }, async (request) => {
    const { id } = request.params
    const { changed } = await actionsOf(ctx, request).revokeKey(id)
    return { id, changed }
  })

  app.post<{ Params: Static<typeof KeyParams>, Body: Static<typeof KeyLimitBody> }>('/keys/:id/limit', {
    onRequest: requireAdmin,
    schema: {
      summary: 'Set or clear a key\'s rate limit',
      tags: ['keys'],
      params: KeyParams,
      querystring: NoQuery,
      body: KeyLimitBody,
      response: { 200: Changed }
    }
  }, async (request) => {
    const { id } = request.params
    const { changed } = await actionsOf(ctx, request).setKeyLimit(id, request.body.rate_limit)
    return { id, changed }
  })

  app.post<{ Params: Static<typeof KeyParams>, Body: Static<typeof RestrictKeyBody> }>('/keys/:id/restrict', {
    schema: {
      summary: 'Restrict a key (permissions, client networks)',
      tags: ['keys'],
      params: KeyParams,
      querystring: NoQuery,
      body: RestrictKeyBody,
      response: { 200: Changed }
    }
  }, async (request) => {
    const { id } = request.params
    const change = { scope: request.body.scope, allowedCidrs: request.body.allowed_cidrs }
    // (a shadow restriction: the key's requests are decided beside it, never by it; docs/safe-change.md)
    if (request.body.shadow === true) {
      await actionsOf(ctx, request).shadowRestrictKey(id, change)
      return { id, changed: true }
    }
    const { changed } = await actionsOf(ctx, request).restrictKey(id, change)
    return { id, changed }
  })

  app.post<{ Params: Static<typeof KeyParams> }>('/keys/:id/restrict/promote', {
    schema: {
      summary: 'Make a key\'s shadow restriction its live restriction (409 without one)',
      tags: ['keys'],
      params: KeyParams,
      querystring: NoQuery,
      body: EmptyBody,
      response: { 200: Changed }
    }
  }, async (request) => {
    await actionsOf(ctx, request).promoteShadowRestriction(request.params.id)
    return { id: request.params.id, changed: true }
  })

  app.delete<{ Params: Static<typeof KeyParams> }>('/keys/:id/restrict/shadow', {
    schema: {
      summary: 'Drop a key\'s shadow restriction (409 without one); its live restriction stays',
      tags: ['keys'],
      params: KeyParams,
      querystring: NoQuery,
      response: { 200: Changed }
    }
  }, async (request) => {
    await actionsOf(ctx, request).dropShadowRestriction(request.params.id)
    return { id: request.params.id, changed: true }
  })

  app.post<{ Params: Static<typeof KeyParams>, Body: Static<typeof RotateKeyBody> }>('/keys/:id/rotate', {
    schema: {
      summary: 'Rotate a key (the old one works for a grace period)',
      tags: ['keys'],
      params: KeyParams,
      querystring: NoQuery,
      body: RotateKeyBody,
      response: { 201: RotatedKeySchema }
    }
  }, async (request, reply) => {
    const graceMs = request.body.grace === undefined ? DEFAULT_GRACE_MS : positive('grace', request.body.grace)
    const rotated = await actionsOf(ctx, request).rotateKey(request.params.id, graceMs)
    reply.code(201)
    return rotated
  })
}
