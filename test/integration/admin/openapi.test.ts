/**
 * GET /admin/v1/openapi.json, from a real gateway's admin listener over HTTP:
 * - it needs an admin credential like every admin route (401 without one);
 * - it is a valid OpenAPI 3 document (@seriousme/openapi-schema-validator);
 * - every route registered under /admin/v1 (fastify's own route table, HEAD included)
 *   is in its paths with its method, and nothing outside /admin/v1 is;
 * - it is built from the schemas that validate: the usage query's `step` enum and a
 *   closed body are in it, as the validator enforces them;
 * - every operation has a summary and a tag, one of the document's tags (each described);
 *   the groups are the expected ones.
 */
import t from 'tap'
import { Validator } from '@seriousme/openapi-schema-validator'
import { startGateway } from '../../helpers/gateway.js'

const TOKEN = 'openapi-admin-token-0123456789abcdef'

interface Operation { summary?: string, tags?: string[], parameters?: Array<{ name: string, in: string, schema?: { enum?: string[], anyOf?: Array<{ enum?: string[] }> } }>, requestBody?: { content: Record<string, { schema: { additionalProperties?: boolean } }> } }
interface Document { openapi: string, tags?: Array<{ name: string, description?: string }>, paths: Record<string, Record<string, Operation>> }

/** `printRoutes({ commonPrefix: false })`: a tree of path segments, each with its methods. */
function routesOf (tree: string): Array<{ method: string, path: string }> {
  const routes: Array<{ method: string, path: string }> = []
  const stack: string[] = []
  for (const line of tree.split('\n')) {
    const m = /^((?:[│ ] {3})*)[├└]── (\S+)(?: \(([A-Z, ]+)\))?$/.exec(line)
    if (m === null) continue
    const [, indent = '', segment = '', methods = ''] = m
    stack.length = indent.length / 4
    stack.push(segment)
    const path = stack.join('')
    for (const method of methods.split(', ').filter((x) => x !== '')) routes.push({ method, path })
  }
  return routes
}

t.test('the admin API describes every route it has', async (t) => {
  const gw = await startGateway(t, { env: { KEYGATE_ADMIN_TOKEN: TOKEN } })

  const anonymous = await gw.admin('GET', '/admin/v1/openapi.json')
  t.equal(anonymous.status, 401, 'no credential, no document')

  const res = await gw.admin('GET', '/admin/v1/openapi.json', { Authorization: `Bearer ${TOKEN}` })
  t.equal(res.status, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  const doc = res.json() as Document
  t.match(doc.openapi, /^3\./)

  const validator = new Validator()
  const result = await validator.validate(doc as unknown as Parameters<Validator['validate']>[0])
  t.same(result.errors ?? [], [], 'no validation errors')
  t.equal(result.valid, true, 'a valid OpenAPI document')

  const all = routesOf(gw.app.admin.printRoutes({ commonPrefix: false }))
  t.ok(all.some((r) => r.path === '/console/' && r.method === 'GET'), 'the route table was read (the console is in it)')
  const admin = all.filter((r) => r.path.startsWith('/admin/v1/'))
  t.ok(admin.length >= 40, `every admin route was found in the route table (${admin.length})`)
  const missing = admin
    .map((r) => ({ method: r.method.toLowerCase(), path: r.path.replace(/:([A-Za-z_]+)/g, '{$1}') }))
    .filter((r) => doc.paths[r.path]?.[r.method] === undefined)
  t.same(missing, [], 'every admin route, method and path, is in the document')
  t.same(Object.keys(doc.paths).filter((p) => !p.startsWith('/admin/v1/')), [], 'nothing outside the admin API')
  const listed = Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method} ${path}`))
  t.equal(listed.length, admin.length, 'and nothing more than them')

  // every operation: a summary and a tag the document describes
  const tags = new Map((doc.tags ?? []).map((x) => [x.name, x.description ?? '']))
  t.same([...tags.keys()].sort(), ['api', 'audit', 'identities', 'keys', 'orgs', 'roles', 'session', 'usage', 'users', 'webhooks'], 'the groups of operations')
  t.same([...tags].filter(([, description]) => description === '').map(([name]) => name), [], 'each described')
  const undescribed = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops)
    .filter(([, op]) => typeof op.summary !== 'string' || op.summary.trim() === '' || (op.tags ?? []).length === 0 || (op.tags ?? []).some((x) => !tags.has(x)))
    .map(([method]) => `${method} ${path}`))
  t.same(undescribed, [], 'every operation has a summary and a tag of the document\'s')
  const tagOf = (method: string, path: string): string | undefined => doc.paths[path]?.[method]?.tags?.[0]
  t.same([
    tagOf('post', '/admin/v1/keys/{id}/rotate'), tagOf('put', '/admin/v1/users/{id}'), tagOf('delete', '/admin/v1/roles/{name}'),
    tagOf('get', '/admin/v1/orgs/{org}'), tagOf('get', '/admin/v1/orgs/{org}/usage'), tagOf('head', '/admin/v1/keys/{id}/usage'),
    tagOf('get', '/admin/v1/audit/refusals'), tagOf('delete', '/admin/v1/session'), tagOf('get', '/admin/v1/openapi.json')
  ], ['keys', 'users', 'roles', 'orgs', 'usage', 'usage', 'audit', 'session', 'api'], 'each route in its group (HEAD as its GET)')
  const summaries = Object.values(doc.paths).flatMap((ops) => Object.entries(ops).filter(([method]) => method !== 'head').map(([, op]) => op.summary))
  t.equal(new Set(summaries).size, summaries.length, 'no two operations (HEAD aside) share a summary')

  const usage = doc.paths['/admin/v1/keys/{id}/usage']?.get
  const step = usage?.parameters?.find((p) => p.in === 'query' && p.name === 'step')
  t.same(step?.schema?.anyOf?.flatMap((s) => s.enum ?? []), ['1m', '1h', '1d'], 'the usage query\'s step, from its TypeBox schema')
  t.ok(usage?.parameters?.some((p) => p.in === 'path' && p.name === 'id'), 'the path parameter')
  const body = doc.paths['/admin/v1/keys']?.post?.requestBody?.content['application/json']?.schema
  t.equal(body?.additionalProperties, false, 'a closed body stays closed in the document')
})
