/**
 * /keys/:id/requests: a key's last decisions (src/usage/key-requests.ts,
 * docs/request-log.md), newest first, scoped like reading the key: a key outside the
 * caller's scope is 404, existing or not. `status` keeps those of one status (`429`)
 * or one class (`4xx`); `limit` caps the answer (at most `request_log.per_key` are kept).
 */
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { actionsOf, type ApiContext } from './context.js'
import { KeyParams } from './schemas.js'

const closed = { additionalProperties: false }

export const KeyRequestsQuery = Type.Object({
  /** at most this many, 1-9999 (default 100) */
  limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,3}$' })),
  status: Type.Optional(Type.String({
    pattern: '^[1-5]([0-9]{2}|xx)$', description: 'a status (429) or a class (4xx)'
  }))
}, closed)

export const KeyRequestsAnswer = Type.Object({
  requests: Type.Array(Type.Object({
    time: Type.String({ description: 'ISO 8601, when the decision was logged' }),
    method: Type.String(),
    path: Type.String({ description: 'the path decided on, without its query; a key-shaped segment as its key id' }),
    status: Type.Integer(),
    reason: Type.String({ description: 'the decision\'s reason (docs/errors.md)' }),
    latency_ms: Type.Number(),
    client: Type.String({ description: 'the client\'s address (a trusted proxy\'s client), or empty' }),
    trace_id: Type.String({ description: 'the request\'s W3C trace id' })
  }, closed))
}, closed)

export function requestLogRoutes (app: FastifyInstance, ctx: ApiContext): void {
  app.get<{ Params: Static<typeof KeyParams>, Querystring: Static<typeof KeyRequestsQuery> }>('/keys/:id/requests', {
    schema: {
      summary: 'A key\'s last decisions, newest first (kept 24 h, request_log.per_key of them)',
      tags: ['usage'],
      params: KeyParams,
      querystring: KeyRequestsQuery,
      response: { 200: KeyRequestsAnswer }
    }
  }, async (request) => {
    const { limit = '100', status } = request.query
    return { requests: await actionsOf(ctx, request).keyRequests(request.params.id, { limit: Number(limit), status }) }
  })
}
