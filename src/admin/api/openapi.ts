/**
 * The admin API's own description: @fastify/swagger collects every route registered
 * in this plugin after it (onRoute) and turns their TypeBox schemas, the same objects
 * that validate the requests (validation.ts), into an OpenAPI 3.0 document, so the
 * document cannot drift from what the API accepts. It changes no validation: it only
 * reads the route options. HEAD routes (fastify answers HEAD for every GET) are listed too.
 */
import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import { VERSION } from '../../version.js'
import { SESSION_COOKIE } from '../sso/index.js'

/** The groups of operations; every operation names one (test/integration/admin/openapi.test.ts). */
export const TAGS = [
  { name: 'keys', description: 'API keys: create, list, show, revoke, rotate, restrict, limit; leaked keys' },
  { name: 'users', description: 'The users personal keys belong to' },
  { name: 'roles', description: 'Roles and the permissions they grant' },
  { name: 'orgs', description: 'Orgs, their rate limits and key policy' },
  { name: 'identities', description: 'Identities: one customer\'s BOT keys, sharing its limits, allowance and meta' },
  { name: 'usage', description: 'Request counts per key, per org and per identity, by the minute, hour or day' },
  { name: 'audit', description: 'The audit trail of changes, and the refusals' },
  { name: 'webhooks', description: 'Webhook endpoints, their deliveries, a delivery sent again (docs/webhooks.md)' },
  { name: 'session', description: 'The signed-in principal, and the console\'s SSO session' },
  { name: 'api', description: 'The API\'s own description' }
] as const

export async function useOpenApi (app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'keygate admin API',
        version: VERSION,
        description: 'Keys, users, roles, orgs, the audit trail and usage. Reference: docs/admin-api.md.'
      },
      tags: [...TAGS],
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: 'the admin token, or a keygate key whose role grants an admin scope'
          },
          session: {
            type: 'apiKey',
            in: 'cookie',
            name: SESSION_COOKIE,
            description: 'an SSO session of the console (named __Host-keygate_session when Secure)'
          }
        }
      },
      security: [{ bearer: [] }, { session: [] }]
    },
    exposeHeadRoutes: true
  })
}

/** GET /openapi.json: the document, built once on first use (the routes are fixed by then). */
export function openApiRoute (app: FastifyInstance): void {
  app.get('/openapi.json', {
    schema: { summary: 'This document: the admin API in OpenAPI 3.0', tags: ['api'] }
  }, async () => app.swagger())
}
